package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// globPattern is the pattern of the glob workload (issue 16).
const globPattern = "**/*.go"

// globContender is one way of finding globPattern's files over MCP.
type globContender struct {
	label  string
	srv    *server
	params *mcp.CallToolParams
	// count returns the files the result lists (or reports matched).
	count     func(*mcp.CallToolResult) (int, error)
	wall, cpu []time.Duration
	files     int
}

// runGlob times harness's glob of globPattern over dir against the
// reference's search_files, the servers taking turns call by call after one
// untimed call each (warm cache), and prints a markdown table of medians.
// harness runs twice: as an agent calls it (.gitignore-aware, hidden files
// left out, 100 results) and over the same files the reference walks
// (no_ignore, include_hidden, the maximum limit); both walk the whole tree
// and sort every match by time. The reference returns every match.
func runGlob(ctx context.Context, cfg config, dir string, runs int) error {
	harnessBin, err := filepath.Abs(cfg.harness)
	if err != nil {
		return err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return err
	}
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		return err
	}
	refMain, err := installReference(ctx, cfg.scratch, cfg.noInstall)
	if err != nil {
		return fmt.Errorf("installing the reference server: %w", err)
	}
	h, err := startServer(ctx, harnessSpec(harnessBin, nil, durabilityFull), dir, cfg.protocol, false)
	if err != nil {
		return err
	}
	defer func() { _ = h.close() }()
	ref, err := startServer(ctx, referenceSpec(refMain, nil), dir, cfg.protocol, false)
	if err != nil {
		return err
	}
	defer func() { _ = ref.close() }()

	matched := func(res *mcp.CallToolResult) (int, error) {
		var v struct{ Matched int }
		raw, err := json.Marshal(res.StructuredContent)
		if err == nil {
			err = json.Unmarshal(raw, &v)
		}
		return v.Matched, err
	}
	contenders := []*globContender{
		{
			label: "harness `glob` (agent defaults: .gitignore-aware, no hidden files, 100 results)", srv: h,
			params: &mcp.CallToolParams{Name: "glob", Arguments: map[string]any{"pattern": globPattern}},
			count:  matched,
		},
		{
			label: "harness `glob` (`no_ignore`, `include_hidden`, 1000 results)", srv: h,
			params: &mcp.CallToolParams{Name: "glob", Arguments: map[string]any{"pattern": globPattern, "no_ignore": true, "include_hidden": true, "limit": 1000}},
			count:  matched,
		},
		{
			label: "reference `search_files` (every match)", srv: ref,
			params: &mcp.CallToolParams{Name: "search_files", Arguments: map[string]any{"path": dir, "pattern": globPattern}},
			count: func(res *mcp.CallToolResult) (int, error) {
				return strings.Count(resultText(res), "\n") + 1, nil
			},
		},
	}
	for i := range runs + 1 { // the first round warms the cache, untimed
		for k := range contenders {
			c := contenders[(i+k)%len(contenders)]
			cpu0 := c.srv.cpu()
			start := time.Now()
			res, err := c.srv.call(ctx, c.params)
			wall := time.Since(start)
			cpu := c.srv.cpu() - cpu0
			if err != nil {
				return fmt.Errorf("%s: %w", c.label, err)
			}
			if c.files, err = c.count(res); err != nil {
				return fmt.Errorf("%s: %w", c.label, err)
			}
			progress("glob round %d: %s: %s, %d files", i, c.label, wall.Round(time.Millisecond), c.files)
			if i > 0 {
				c.wall, c.cpu = append(c.wall, wall), append(c.cpu, cpu)
			}
			if ctx.Err() != nil {
				return errors.New("interrupted")
			}
		}
	}
	refWall := medianDuration(contenders[len(contenders)-1].wall)
	fmt.Printf("glob `%s` over %s, %d timed calls each, warm cache; medians\n\n", globPattern, dir, runs)
	fmt.Println("| contender | matching files | wall | server CPU | reference / this, wall |")
	fmt.Println("|---|---|---|---|---|")
	for _, c := range contenders {
		w := medianDuration(c.wall)
		fmt.Printf("| %s | %d | %s | %s | %.1fx |\n", c.label, c.files,
			w.Round(time.Millisecond), medianDuration(c.cpu).Round(time.Millisecond), refWall.Seconds()/w.Seconds())
	}
	return nil
}

// medianDuration returns the median of ds (the upper one of an even count).
func medianDuration(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
