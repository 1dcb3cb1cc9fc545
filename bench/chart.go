package main

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Colors of the series in the chart.
var serverColors = map[string]color.Color{
	keyHarness:   color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	keyAtomic:    color.RGBA{R: 0x8e, G: 0xc1, B: 0xe6, A: 0xff},
	keyReference: color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	keyFloor:     color.RGBA{R: 0xbb, G: 0xbb, B: 0xbb, A: 0xff},
}

// panel is one tile of the chart: grouped bars, one group per point.
type panel struct {
	title  string
	unit   string
	points []point
	names  []string
}

// drawChart draws calls/s (median of the runs) of every series per
// workload as grouped bars, one panel per workload, to path (.svg or .png).
func drawChart(r *results, path string) error {
	c8 := fmt.Sprintf("c=%d", maxConc)
	panels := []panel{
		{"read, " + fmtSize(r.cfg.fileSize), "calls/s", []point{{wRead, 1}, {wRead, maxConc}}, []string{"c=1", c8}},
		{"overwrite, " + fmtSize(r.cfg.fileSize), "calls/s", []point{{wOverwrite, 1}, {wOverwrite, maxConc}}, []string{"c=1", c8}},
		{"one-line edit", "calls/s", []point{{wEdit, 1}, {wEdit, maxConc}}, []string{"c=1", c8}},
		{
			fmt.Sprintf("create %s files: into empty dir / into dir of %s", fmtInt(r.cfg.creates), fmtInt(r.cfg.prefill)), "files/s",
			[]point{{wCreateEmpty, 1}, {wCreateFull, 1}, {wCreateEmpty, maxConc}, {wCreateFull, maxConc}},
			[]string{"empty c=1", "full c=1", "empty " + c8, "full " + c8},
		},
	}
	const cols = 2
	rows := (len(panels) + cols - 1) / cols
	grid := make([][]*plot.Plot, rows)
	for i := range grid {
		grid[i] = make([]*plot.Plot, cols)
	}
	for i, pn := range panels {
		p, err := panelPlot(r, pn)
		if err != nil {
			return err
		}
		grid[i/cols][i%cols] = p
	}

	w, h := 24*vg.Centimeter, vg.Length(rows)*9*vg.Centimeter+3.6*vg.Centimeter
	tiles := draw.Tiles{
		Rows: rows, Cols: cols, PadX: vg.Centimeter, PadY: vg.Centimeter,
		PadTop: 3.6 * vg.Centimeter, PadBottom: vg.Millimeter * 3, PadLeft: vg.Millimeter * 3, PadRight: vg.Millimeter * 6,
	}

	var write func(f *os.File) error
	var dc draw.Canvas
	switch strings.ToLower(filepath.Ext(path)) {
	case ".svg":
		c := vgsvg.New(w, h)
		dc = draw.New(c)
		write = func(f *os.File) error { _, err := c.WriteTo(f); return err }
	case ".png":
		c := vgimg.New(w, h)
		dc = draw.New(c)
		write = func(f *os.File) error { _, err := vgimg.PngCanvas{Canvas: c}.WriteTo(f); return err }
	default:
		return fmt.Errorf("%s: want a .svg or .png file", path)
	}
	dc.SetColor(color.White)
	dc.Fill(dc.Path())

	title := plot.New().Title.TextStyle
	title.Font.Size = vg.Points(13)
	title.XAlign = draw.XLeft
	dc.FillText(title, vg.Point{X: vg.Centimeter, Y: h - vg.Millimeter*9},
		fmt.Sprintf("harness vs reference MCP filesystem server: medians of %d runs (creation: %d), %s", r.cfg.runs, r.cfg.createRuns, r.machine.date))

	// One legend for all panels, under the title.
	legend := plot.NewLegend()
	legend.Top, legend.Left = true, true
	legend.YOffs = -15 * vg.Millimeter
	legend.XOffs = vg.Centimeter
	for _, sp := range r.specs {
		bars, err := plotter.NewBarChart(plotter.Values{1}, 1)
		if err != nil {
			return err
		}
		bars.Color = serverColors[sp.key]
		bars.LineStyle.Width = 0
		legend.Add(sp.label, bars)
	}
	legend.Draw(dc)

	canvases := plot.Align(grid, tiles, dc)
	for i := range grid {
		for j, p := range grid[i] {
			if p != nil {
				p.Draw(canvases[i][j])
			}
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func panelPlot(r *results, pn panel) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = pn.title
	p.Y.Label.Text = pn.unit
	p.Y.Min = 0
	// Bars of one group fit in 56 points whatever the number of series.
	barW := vg.Points(56 / float64(max(len(r.specs), 3)))
	top := 0.0
	for k, s := range r.specs {
		vals := make(plotter.Values, len(pn.points))
		// Bars of one group side by side, centered on the group.
		offset := barW * vg.Length(2*k-(len(r.specs)-1)) / 2
		labels := &plotter.Labels{Offset: vg.Point{X: offset, Y: vg.Points(2)}}
		for i, pt := range pn.points {
			vals[i] = r.med(pt, s.key)
			top = max(top, vals[i])
			labels.XYs = append(labels.XYs, plotter.XY{X: float64(i), Y: vals[i]})
			labels.Labels = append(labels.Labels, fmtRate(vals[i]))
		}
		bars, err := plotter.NewBarChart(vals, barW)
		if err != nil {
			return nil, err
		}
		bars.Color = serverColors[s.key]
		bars.LineStyle.Width = 0
		bars.Offset = offset
		p.Add(bars)

		style := plot.New().Title.TextStyle
		style.Font.Size = vg.Points(min(7, barW.Points()/2.6))
		style.XAlign = draw.XCenter
		style.YAlign = draw.YBottom
		for range labels.XYs {
			labels.TextStyle = append(labels.TextStyle, style)
		}
		p.Add(labels)
	}
	p.Y.Max = top * 1.12 // room for the labels
	p.NominalX(pn.names...)
	return p, nil
}
