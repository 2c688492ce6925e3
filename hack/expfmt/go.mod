module kvcache/expfmt-reader

go 1.25.0

require github.com/prometheus/common v0.70.0

require (
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/prometheus/client_model v0.6.2 // indirect
	google.golang.org/protobuf v1.36.11 // indirect
)
