package audit

import "regexp"

// Redacted replaces each credential-looking value RedactCommand finds.
const Redacted = "[REDACTED]"

// secretName is a name (of a variable, a flag or a header) that says it
// holds a credential: one holding TOKEN, SECRET, PASSWORD, PASSWD,
// API_KEY, APIKEY, ACCESS_KEY, PRIVATE_KEY or CREDENTIAL, any case, "-"
// or "_" between the words.
const secretName = `[A-Za-z0-9_.-]*(?i:token|secret|passw(?:or)?d|api[_-]?key|access[_-]key|private[_-]key|credential)[A-Za-z0-9_.-]*`

// shellWord is one value as a shell line holds it: quoted, or up to the
// next blank or shell operator.
const shellWord = `(?:'[^']*'|"[^"]*"|[^\s;&|<>()'"]+)`

// redactions are RedactCommand's rules, applied in order; each keeps what
// its groups matched (the first before the secret, the second, if any,
// after it) and replaces the rest with Redacted (the whole match when
// there is no group).
var redactions = []*regexp.Regexp{
	// Authorization: <scheme> <credentials>, as a header or a variable.
	regexp.MustCompile(`((?i:\bauthorization)\s*[:=]\s*)(?:[A-Za-z]+\s+)?[^\s'"]+`),
	// Bearer <token>, Basic <base64>.
	regexp.MustCompile(`((?i:\b(?:bearer|basic))\s+)[A-Za-z0-9._~+/=-]{6,}`),
	// user:password@ in a URL: the password.
	regexp.MustCompile(`(\b[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@'"]*:)[^/\s@'"]+(@)`),
	// NAME=value, --name=value, NAME: value.
	regexp.MustCompile(`(\b` + secretName + `\s*(?:=|:\s*))` + shellWord),
	// --name value.
	regexp.MustCompile(`((?:^|\s)--?` + secretName + `\s+)[^-\s]` + `(?:'[^']*'|"[^"]*"|[^\s;&|<>()'"])*`),
	// Well-known token shapes: GitHub, AWS access key IDs, OpenAI-style
	// keys, Slack, GitLab, npm.
	regexp.MustCompile(`(\b(?:gh[pousr]_|github_pat_))[A-Za-z0-9_]{16,}`),
	regexp.MustCompile(`\bAKIA[0-9A-Z]{16}\b`),
	regexp.MustCompile(`(\bsk-)[A-Za-z0-9_-]{16,}`),
	regexp.MustCompile(`(\bxox[abpr]-)[A-Za-z0-9-]{8,}`),
	regexp.MustCompile(`(\bglpat-)[A-Za-z0-9_-]{16,}`),
	regexp.MustCompile(`(\bnpm_)[A-Za-z0-9]{30,}`),
}

// RedactCommand returns line, a command line, with the values that look
// like credentials replaced by Redacted: the value of a variable
// assignment, flag or header whose name holds TOKEN, SECRET, PASSWORD,
// PASSWD, API_KEY, APIKEY, ACCESS_KEY, PRIVATE_KEY or CREDENTIAL (any case:
// FOO_TOKEN=abc, --password abc, --api-key=abc); what follows
// "Authorization:", "Bearer" or "Basic"; the password of a URL's userinfo
// (https://user:pass@host); and tokens of well-known shapes (ghp_, gho_,
// ghu_, ghs_, ghr_, github_pat_, AKIA..., sk-..., xoxb-..., glpat-, npm_),
// whose prefix is kept. It finds these patterns only: a secret in another
// form is kept as typed.
func RedactCommand(line string) string {
	for _, re := range redactions {
		if re.NumSubexp() == 0 {
			line = re.ReplaceAllLiteralString(line, Redacted)
		} else {
			line = re.ReplaceAllString(line, "${1}"+Redacted+"${2}")
		}
	}
	return line
}
