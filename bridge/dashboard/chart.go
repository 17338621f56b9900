package dashboard

import (
	"fmt"
	"strings"
	"time"
)

// Size of one server's chart, in SVG units.
const (
	chartWidth  = 600
	chartHeight = 100
	barWidth    = chartWidth / ChartMinutes
)

// chart is one server's chart: a bar per minute for its calls (errors in
// their own colour on top), and a line of the minute's mean latency.
type chart struct {
	Server        string
	Calls, Errors int
	MeanMS, MaxMS float64
	PeakCalls     int
	PeakMS        float64
	Bars          []bar
	Latency       string // the latency line's points
	Dots          []dot  // and each of them
	Width, Height int
	First, Last   string // the times at either end
}

type dot struct{ X, Y float64 }

type bar struct {
	X, Y, H int // the calls' bar
	EY, EH  int // the errors' part of it
	Title   string
}

// charts draws each server's last hour.
func charts(hour []Series, now time.Time) []chart {
	var out []chart
	for _, s := range hour {
		c := chart{Server: s.Server, Width: chartWidth, Height: chartHeight}
		var sumMS float64
		for _, m := range s.Minutes {
			c.Calls += m.Calls
			c.Errors += m.Errors
			sumMS += m.MS
			c.PeakCalls = max(c.PeakCalls, m.Calls)
			c.MaxMS = max(c.MaxMS, m.MaxMS)
			if m.Calls > 0 {
				c.PeakMS = max(c.PeakMS, m.MS/float64(m.Calls))
			}
		}
		if c.Calls > 0 {
			c.MeanMS = sumMS / float64(c.Calls)
		}
		var points []string
		for i, m := range s.Minutes {
			x := i * barWidth
			b := bar{X: x, Y: chartHeight, Title: fmt.Sprintf("%s: %d calls, %d failed", m.Start.Local().Format("15:04"), m.Calls, m.Errors)}
			if m.Calls > 0 {
				b.H = max(1, m.Calls*chartHeight/c.PeakCalls)
				b.Y = chartHeight - b.H
				b.EH = m.Errors * chartHeight / c.PeakCalls
				b.EY = chartHeight - b.EH
				mean := m.MS / float64(m.Calls)
				b.Title += fmt.Sprintf(", %.1f ms mean", mean)
				y := float64(chartHeight)
				if c.PeakMS > 0 {
					y = chartHeight - mean*(chartHeight-2)/c.PeakMS
				}
				points = append(points, fmt.Sprintf("%d,%.1f", x+barWidth/2, y))
				c.Dots = append(c.Dots, dot{float64(x + barWidth/2), y})
			}
			c.Bars = append(c.Bars, b)
		}
		c.Latency = strings.Join(points, " ")
		c.First = s.Minutes[0].Start.Local().Format("15:04")
		c.Last = s.Minutes[len(s.Minutes)-1].Start.Local().Format("15:04")
		out = append(out, c)
	}
	return out
}
