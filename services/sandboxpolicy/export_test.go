package sandboxpolicy

// Test-only views of unexported helpers.
var (
	Wider                = wider
	IsWider              = isWider
	ErrInvalidEscalation = errInvalidEscalation
)
