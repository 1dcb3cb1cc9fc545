package main

import (
	"bufio"
	"bytes"
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Markers of the generated section in the markdown file.
const (
	beginMarker = "<!-- bench:begin -->"
	endMarker   = "<!-- bench:end -->"
)

// machine describes where the figures were measured.
type machine struct {
	cpu, kernel, fs, tempDir, goVersion, node, date, load string
	cores                                                 int
	memGiB                                                float64
}

func (m machine) line() string {
	return fmt.Sprintf("%s, %d cores, %.0f GiB, Linux %s, temp dir %s on %s, %s (bin/harness), Node %s, %s",
		m.cpu, m.cores, m.memGiB, m.kernel, m.tempDir, m.fs, m.goVersion, m.node, m.date)
}

func describeMachine(ctx context.Context, harnessBin string) (machine, error) {
	m := machine{cpu: "unknown CPU", cores: runtime.NumCPU(), date: time.Now().Format("2006-01-02")}
	if raw, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(raw)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	if raw, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.Lines(string(raw)) {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
				kb, _ := strconv.ParseFloat(f[1], 64)
				m.memGiB = kb / (1 << 20)
			}
		}
	}
	if raw, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.kernel = strings.TrimSpace(string(raw))
	}
	m.load = loadAverage()
	tmp, err := filepath.EvalSymlinks(os.TempDir())
	if err != nil {
		return m, err
	}
	m.tempDir = tmp
	m.fs = filesystemOf(tmp)
	if bi, err := buildinfo.ReadFile(harnessBin); err == nil {
		m.goVersion = bi.GoVersion
	} else {
		m.goVersion = runtime.Version() + "?"
	}
	out, err := exec.CommandContext(ctx, "node", "--version").Output()
	if err != nil {
		return m, fmt.Errorf("node --version: %w", err)
	}
	m.node = strings.TrimSpace(string(out))
	return m, nil
}

// loadAverage is the 1-minute load average.
func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(raw)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}

// filesystemOf returns the type, source and options of the mount holding
// path, from /proc/self/mountinfo.
func filesystemOf(path string) string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "unknown filesystem"
	}
	defer func() { _ = f.Close() }()
	best, bestLen := "unknown filesystem", -1
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 6 || len(tail) < 3 {
			continue
		}
		mnt := unescapeMount(fields[4])
		if mnt != "/" && path != mnt && !strings.HasPrefix(path, mnt+"/") {
			continue
		}
		if len(mnt) > bestLen {
			bestLen = len(mnt)
			best = fmt.Sprintf("%s (%s, %s)", tail[0], tail[1], keepOptions(tail[2]))
			if tail[0] == "ext4" {
				if journal, ok := ext4JournalOf(tail[1]); ok && journal {
					best = fmt.Sprintf("ext4 with a journal (%s, %s)", tail[1], keepOptions(tail[2]))
				} else if ok {
					best = fmt.Sprintf("ext4 without a journal (%s, %s)", tail[1], keepOptions(tail[2]))
				}
			}
		}
	}
	return best
}

// recentlyDeleted is how long ext4 without a journal avoids reusing a freed
// inode (30 s, 35 s while its inode table block is dirty).
const recentlyDeleted = 36 * time.Second

// ext4Journal reports whether the ext4 filesystem holding path has a journal;
// ok is false when it is not ext4 or it cannot tell.
func ext4Journal(path string) (journal, ok bool) {
	fs := filesystemOf(path)
	if !strings.HasPrefix(fs, "ext4 ") {
		return false, false
	}
	return strings.HasPrefix(fs, "ext4 with a journal"), strings.Contains(fs, "journal")
}

// ext4JournalOf reads /sys/fs/ext4/DEV/journal_task: "<none>" without a
// journal.
func ext4JournalOf(source string) (journal, ok bool) {
	raw, err := os.ReadFile(filepath.Join("/sys/fs/ext4", filepath.Base(source), "journal_task"))
	if err != nil {
		return false, false
	}
	return strings.TrimSpace(string(raw)) != "<none>", true
}

// keepOptions keeps the mount options that matter for write latency.
func keepOptions(opts string) string {
	var keep []string
	for o := range strings.SplitSeq(opts, ",") {
		switch {
		case o == "discard", o == "nobarrier", o == "barrier", o == "sync", o == "dirsync",
			strings.HasPrefix(o, "data="), strings.HasPrefix(o, "commit="), strings.HasPrefix(o, "journal"):
			keep = append(keep, o)
		}
	}
	if len(keep) == 0 {
		return "default options"
	}
	return strings.Join(keep, ",")
}

func unescapeMount(s string) string {
	r := strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`)
	return r.Replace(s)
}

func absOr(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// updateMarked replaces the marked section of the markdown file path with
// section (which carries the markers); with no markers yet, it inserts the
// section before the first "## " heading. The rest of the file is kept byte
// for byte.
func updateMarked(path, section string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var out []byte
	begin := bytes.Index(raw, []byte(beginMarker))
	end := bytes.Index(raw, []byte(endMarker))
	switch {
	case begin >= 0 && end > begin:
		end += len(endMarker)
		if end < len(raw) && raw[end] == '\n' {
			end++
		}
		out = append(append(append(out, raw[:begin]...), section...), raw[end:]...)
	case begin >= 0 || end >= 0:
		return fmt.Errorf("%s: only one of %s and %s is present", path, beginMarker, endMarker)
	default:
		at := len(raw)
		if i := bytes.Index(raw, []byte("\n## ")); i >= 0 {
			at = i + 1
		} else if len(raw) > 0 && raw[len(raw)-1] != '\n' {
			raw = append(raw, '\n')
			at = len(raw)
		}
		out = append(append(append(append(out, raw[:at]...), section...), '\n'), raw[at:]...)
	}
	return writeAtomic(path, out)
}

// writeAtomic replaces path with data through a temp file beside it.
func writeAtomic(path string, data []byte) error {
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr, os.Chmod(f.Name(), mode)); err != nil {
		_ = os.Remove(f.Name())
		return err
	}
	return os.Rename(f.Name(), path)
}

// printSummary prints the medians, cold starts, memory and targets on
// stderr.
func printSummary(r *results) {
	var keys []string // the measured contenders, floor left out
	for _, sp := range r.specs {
		if sp.key != keyFloor {
			keys = append(keys, sp.key)
		}
	}
	if len(keys) == 0 {
		return
	}
	progress("medians of %d runs (calls/s; ratios over the reference):", r.cfg.runs)
	for _, p := range r.points {
		fmt.Fprintf(os.Stderr, "  %-16s", p)
		for _, k := range keys {
			fmt.Fprintf(os.Stderr, " %s %s", k, fmtRate(r.med(p, k)))
			if k != keyReference {
				fmt.Fprintf(os.Stderr, " (%s)", fmtRatio(r.ratioOf(p, k)))
			}
		}
		if _, ok := r.byPoint[p][keyFloor]; ok {
			fmt.Fprintf(os.Stderr, "  floor %s", fmtRate(r.med(p, keyFloor)))
		}
		fmt.Fprintf(os.Stderr, "  (CPU µs/call, server+client:")
		for _, k := range keys {
			fmt.Fprintf(os.Stderr, " %s %.0f+%.0f", k, r.cpuMed(p, k), r.clientMed(p, k))
		}
		fmt.Fprintln(os.Stderr, ")")
	}
	startupLine := func(name string, cell func(k string) (string, float64)) {
		fmt.Fprintf(os.Stderr, "  %s:", name)
		vals := map[string]float64{}
		for _, k := range keys {
			text, v := cell(k)
			vals[k] = v
			fmt.Fprintf(os.Stderr, " %s %s", k, text)
		}
		fmt.Fprintf(os.Stderr, "; reference / harness %s, reference / harness-atomic %s\n",
			fmtRatio(vals[keyReference]/vals[keyHarness]), fmtRatio(vals[keyReference]/vals[keyAtomic]))
	}
	if n := len(r.startup[keys[0]].walls()); n > 0 {
		startupLine(fmt.Sprintf("cold start (spawn to tools/list answered, go-sdk client), median of %d", n), func(k string) (string, float64) {
			v := median(r.startup[k].walls())
			return fmtMs(v), v
		})
		startupLine(fmt.Sprintf("idle RSS after tools/list, median of %d", n), func(k string) (string, float64) {
			v := median(r.startup[k].idles())
			return fmtMB(v), v
		})
	}
	startupLine(fmt.Sprintf("peak RSS over a run (VmHWM), median of %d runs", r.cfg.runs), func(k string) (string, float64) {
		v := median(r.peakRSS[k])
		return fmtMB(v), v
	})
	for _, t := range targets {
		fmt.Fprintf(os.Stderr, "  target %s\n", t.line(r))
	}
	if r.exec != nil && r.exec.err == nil {
		printExec(r.exec)
	}
}

// fmtRate formats calls/s: thousands separated, no decimals from 100 on.
func fmtRate(v float64) string {
	if v < 100 {
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return fmtInt(int(math.Round(v)))
}

func fmtInt(n int) string {
	s := strconv.Itoa(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func fmtSize(n int) string {
	if n%1024 == 0 {
		return fmt.Sprintf("%d KiB", n/1024)
	}
	return fmt.Sprintf("%d-byte", n)
}

func fmtMicros(us float64) string {
	if us <= 0 {
		return "?"
	}
	return fmt.Sprintf("%.0f µs", us)
}

func fmtDur(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " s"
}
