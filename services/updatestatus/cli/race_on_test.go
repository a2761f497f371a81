//go:build race

package cli

// raceSlowdown is how much slower code runs under the race detector, which
// `make test` enables for this package: bounds on time are scaled by it.
const raceSlowdown = 10
