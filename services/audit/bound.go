package audit

import "unicode/utf8"

// The bounds of one record. A record's lists keep their first MaxList
// items and count the rest (the *More fields); its strings keep their
// first MaxField bytes (cut on a character boundary, ending in "…"); and
// its line is at most MaxRecordBytes: a record that still encodes longer
// keeps fewer items and shorter strings (shrink), down to no list items and
// strings of 64 bytes, which always fits.
const (
	// MaxList is how many items a record keeps of each of its lists
	// (paths, changes, and a command's denials, hosts allowed and hosts
	// refused).
	MaxList = 64
	// MaxField is how many bytes a record keeps of each string (a path,
	// a host, the client's name, ...); the command line has its own,
	// smaller cap (MaxCommandLine).
	MaxField = 4096
	// MaxRecordBytes is the largest line, newline included, the log
	// writes for one record.
	MaxRecordBytes = 64 << 10
)

// shrinks are the successive (list, field) caps bound tries until the
// record encodes within MaxRecordBytes. The last one always fits: with no
// list items, a record is about 20 strings, each at most 64 bytes, at
// most 6 bytes each once escaped.
var shrinks = [...]struct{ list, field int }{{MaxList, MaxField}, {16, 1024}, {4, 256}, {0, 64}}

// Bound returns r within the record bounds: each list cut to MaxList items
// with the count of the rest added to its *More field, each string cut to
// MaxField bytes. It does not look at the encoded size; the log does
// (EncodeBounded).
func Bound(r Record) Record {
	return bound(r, shrinks[0].list, shrinks[0].field)
}

// EncodeBounded encodes r as the audit log writes it: one JSON line (with
// its newline) of at most MaxRecordBytes, shrinking its lists and strings
// as needed (services/telemetry sends the same line as a log record).
func EncodeBounded(r Record) []byte {
	var b []byte
	for _, s := range shrinks {
		b = marshal(bound(r, s.list, s.field))
		if len(b) <= MaxRecordBytes {
			break
		}
	}
	return b
}

// bound returns a copy of r with lists cut to list items and strings to
// field bytes; r itself is not changed.
func bound(r Record, list, field int) Record {
	cut := func(s string) string { return Cut(s, field) }
	r.Session, r.Client, r.Principal, r.Tool, r.Call = cut(r.Session), cut(r.Client), cut(r.Principal), cut(r.Tool), cut(r.Call)
	r.Mode, r.Marker, r.Code = cut(r.Mode), cut(r.Marker), cut(r.Code)
	var more int
	r.Paths, more = cutList(r.Paths, list, cut)
	r.PathsMore += more
	if len(r.Changes) > 0 {
		cs := r.Changes
		if len(cs) > list {
			r.ChangesMore += len(cs) - list
			cs = cs[:list]
		}
		r.Changes = make([]Change, len(cs))
		for i, c := range cs {
			r.Changes[i] = Change{Path: cut(c.Path), Before: cut(c.Before), After: cut(c.After), Journal: cut(c.Journal)}
		}
	}
	if r.Escalation != nil {
		e := *r.Escalation
		e.What, e.Justification, e.Answer, e.Scope = cut(e.What), cut(e.Justification), cut(e.Answer), cut(e.Scope)
		r.Escalation = &e
	}
	if r.Command != nil {
		c := *r.Command
		c.Line = Cut(c.Line, min(field, MaxCommandLine))
		c.Workdir, c.Signal, c.Journal = cut(c.Workdir), cut(c.Signal), cut(c.Journal)
		c.Denials, more = cutList(c.Denials, list, cut)
		c.DenialsMore += more
		c.HostsAllowed, more = cutList(c.HostsAllowed, list, cut)
		c.HostsAllowedMore += more
		c.HostsRefused, more = cutList(c.HostsRefused, list, cut)
		c.HostsRefusedMore += more
		r.Command = &c
	}
	return r
}

// cutList returns a copy of the first n items of l, each cut, and how many
// items were left out.
func cutList(l []string, n int, cut func(string) string) ([]string, int) {
	if len(l) == 0 {
		return l, 0
	}
	more := 0
	if len(l) > n {
		more = len(l) - n
		l = l[:n]
	}
	if len(l) == 0 {
		return nil, more
	}
	out := make([]string, len(l))
	for i, s := range l {
		out[i] = cut(s)
	}
	return out, more
}

// Ellipsis ends a string a record cut.
const Ellipsis = "…"

// Cut returns s when it is at most n bytes, else its longest prefix
// ending on a character boundary that, with Ellipsis after it, is at most
// n bytes (n at least len(Ellipsis), 3).
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	c := max(n-len(Ellipsis), 0)
	for c > 0 && !utf8.RuneStart(s[c]) {
		c--
	}
	return s[:c] + Ellipsis
}
