//go:build race

package testdb

// raceDetector is set in a build with the race detector (make test-race).
const raceDetector = true
