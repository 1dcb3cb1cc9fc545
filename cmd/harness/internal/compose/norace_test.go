//go:build !race

package compose_test

// raceDetector tells whether the test binary runs under the race detector.
const raceDetector = false
