"""kubera's fuzz harness (hypothesis; a test dependency, so only tests/fuzz/ and `kubera
bench fuzz` import it): `harness` runs a real apiserver and tallies its answers,
`grpc_inputs` generates requests for every gRPC method, `manifests` fuzzes the CLI's
manifest decoder."""
