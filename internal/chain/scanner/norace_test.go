//go:build !race

package scanner_test

// raceDetector is set when the tests run under the race detector (race_test.go).
const raceDetector = false
