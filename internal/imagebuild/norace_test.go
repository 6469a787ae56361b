//go:build !race

package imagebuild

const raceEnabled = false
