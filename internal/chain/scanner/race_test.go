//go:build race

package scanner_test

// raceDetector is set when the tests run under the race detector (make
// test-race), where go-ethereum's simulated chain mines about ten times slower.
const raceDetector = true
