package textfile

// DetectStyle returns the dominant line-ending style of the whole of s, as
// Endings counts it; the tests compare the streaming count with it.
func DetectStyle(s string) Style {
	var e Endings
	e.Add(s)
	return e.Style()
}
