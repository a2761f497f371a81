module github.com/upshift-io/upshift/tools

go 1.26.0

require (
	github.com/onsi/ginkgo/v2 v2.27.4
	github.com/onsi/gomega v1.39.0
	github.com/openshift/api v0.0.0-20260813212709-d4bb0b443cb8
	github.com/upshift-io/upshift/api v0.0.0
	github.com/upshift-io/upshift/libs v0.0.0
	k8s.io/api v0.36.3
	k8s.io/apimachinery v0.36.3
	k8s.io/client-go v0.36.3
	sigs.k8s.io/controller-runtime v0.24.1
)

replace (
	github.com/upshift-io/upshift/api => ../api
	github.com/upshift-io/upshift/libs => ../libs
)
