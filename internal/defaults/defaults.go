// Package defaults fills in the limits of an options struct, the one rule
// that the root package's Options and the remote module's options share.
package defaults

// Positive returns n when it is positive, else def: a limit of zero (or a
// negative one) in an options struct means its default.
func Positive(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}
