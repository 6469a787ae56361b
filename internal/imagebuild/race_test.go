//go:build race

package imagebuild

// raceEnabled: under -race, the test builds with its own (smaller) executable.
const raceEnabled = true
