package main

import (
	"slices"
	"strings"
	"testing"
)

func TestMirrorBwrapArgs(t *testing.T) {
	argv := strings.Fields(`/proc/self/fd/7 --die-with-parent --new-session --unshare-user --unshare-pid
		--cap-drop ALL --ro-bind / / --dev /dev --proc /proc --tmpfs /dev/shm --unshare-net
		--bind-try /w/serve /w/serve --bind-try /t /t
		--bind-try /t/churn-3.git /t/churn-3.git --ro-bind /t/churn-3.git/commondir /t/churn-3.git/commondir
		--perms 0555 --tmpfs /t/churn-3.git/hooks --remount-ro /t/churn-3.git/hooks
		--perms 0555 --tmpfs /w/serve/.git --remount-ro /w/serve/.git
		--perms 0000 --ro-bind-data 11 /root/.npmrc --info-fd 5 -- /proc/self/fd/6 __exec-confined stage`)
	drop := func(p string) bool { return strings.HasPrefix(p, "/t/churn-") }
	args, fds, dropped, err := mirrorBwrapArgs(argv, "/w/serve", "/w/bwrap", 3, drop)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Fields(`--die-with-parent --new-session --unshare-user --unshare-pid
		--cap-drop ALL --ro-bind / / --dev /dev --proc /proc --tmpfs /dev/shm --unshare-net
		--bind-try /w/bwrap /w/bwrap --bind-try /t /t
		--perms 0555 --tmpfs /w/bwrap/.git --remount-ro /w/bwrap/.git
		--perms 0000 --ro-bind-data 3 /root/.npmrc -- /bin/true`)
	if !slices.Equal(args, want) {
		t.Errorf("args\n got %q\nwant %q", args, want)
	}
	if fds != 1 || dropped != 4 {
		t.Errorf("fds %d dropped %d, want 1 and 4", fds, dropped)
	}
	for _, bad := range [][]string{
		{"bwrap", "--seccomp", "9", "--", "x"},
		{"bwrap", "--ro-bind", "/"},
		{"bwrap", "--unshare-pid"},
	} {
		if _, _, _, err := mirrorBwrapArgs(bad, "/w", "/v", 3, nil); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestFailureKinds(t *testing.T) {
	got := failureKinds([]string{
		"cannot place pid 12 in cmd-3\nmore",
		"cannot place pid 40 in cmd-9",
		"group 0123456789abcdef0123 gone",
	})
	want := []failureKind{{"cannot place pid N in cmd-N", 2}, {"group H gone", 1}}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
