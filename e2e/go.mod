module github.com/upshift-io/upshift/e2e

go 1.26.0

replace (
	github.com/upshift-io/upshift/api => ../api
	github.com/upshift-io/upshift/libs => ../libs
)
