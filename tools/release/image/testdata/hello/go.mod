module example.com/hello

go 1.26.0
