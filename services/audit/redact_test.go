package audit_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/dsh-go/harness/services/audit"
)

func TestRedactCommand(t *testing.T) {
	for _, tt := range []struct{ name, in, want string }{
		{"an ordinary command is kept", "go test ./... && git push origin main", "go test ./... && git push origin main"},
		{"words near the names are kept", "grep -r token_count src/ | sort", "grep -r token_count src/ | sort"},
		{"an env-style assignment", "FOO_TOKEN=abc make deploy", "FOO_TOKEN=[REDACTED] make deploy"},
		{"an export, lower case", "export aws_secret_access_key=abc/DEF123; ls", "export aws_secret_access_key=[REDACTED]; ls"},
		{"a quoted value", `DB_PASSWORD="hunter 2" ./run`, `DB_PASSWORD=[REDACTED] ./run`},
		{"passwd and credential", "PGPASSWD=x GOOGLE_CREDENTIALS='{}' app", "PGPASSWD=[REDACTED] GOOGLE_CREDENTIALS=[REDACTED] app"},
		{"a flag with =", "tool --api-key=abc --verbose", "tool --api-key=[REDACTED] --verbose"},
		{"a flag and its value", "mysql --password abc -u root", "mysql --password [REDACTED] -u root"},
		{"a flag followed by another flag keeps it", "cmd --token --verbose", "cmd --token --verbose"},
		{"apikey, access key, private key", "x -apikey k1 --access_key k2 PRIVATE_KEY=k3", "x -apikey [REDACTED] --access_key [REDACTED] PRIVATE_KEY=[REDACTED]"},
		{"an Authorization header", `curl -H "Authorization: Bearer abc.def" https://x`, `curl -H "Authorization: [REDACTED]" https://x`},
		{"Bearer alone", `curl -H 'X-Auth: bearer abcdef123' x`, `curl -H 'X-Auth: bearer [REDACTED]' x`},
		{"Basic", "wget --header 'Proxy: Basic dXNlcjpwYXNz' y", "wget --header 'Proxy: Basic [REDACTED]' y"},
		{"an API key header", `curl -H "X-Api-Key: abc123" x`, `curl -H "X-Api-Key: [REDACTED]" x`},
		{"URL userinfo", "git clone https://me:s3cr3t@example.com/r.git", "git clone https://me:[REDACTED]@example.com/r.git"},
		{"a URL without a password is kept", "git clone https://me@example.com/r.git", "git clone https://me@example.com/r.git"},
		{"a GitHub token", "echo ghp_AAAABBBBCCCCDDDDEEEEFFFF1234 | gh auth login", "echo ghp_[REDACTED] | gh auth login"},
		{"a fine-grained GitHub token", "x github_pat_11ABCDEFG0123456789_abcdefghijkl", "x github_pat_[REDACTED]"},
		{"an AWS access key ID", "aws configure set aws_access_key_id AKIAIOSFODNN7EXAMPLE", "aws configure set aws_access_key_id [REDACTED]"},
		{"an sk- key", "llm -k sk-proj-abcdefghijklmnop1234", "llm -k sk-[REDACTED]"},
		{
			"Slack, GitLab, npm", "a xoxb-1234-5678-abcd glpat-abcdefghij0123456789 npm_abcdefghijklmnopqrstuvwxyz0123456789",
			"a xoxb-[REDACTED] glpat-[REDACTED] npm_[REDACTED]",
		},
		{
			"the review's line", `echo curl -H "Authorization: Bearer ghp_AAAABBBBCCCCDDDDEEEEFFFF1234" https://x; export AWS_SECRET_ACCESS_KEY=abc/DEF123`,
			`echo curl -H "Authorization: [REDACTED]" https://x; export AWS_SECRET_ACCESS_KEY=[REDACTED]`,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, audit.RedactCommand(tt.in))
		})
	}
}
