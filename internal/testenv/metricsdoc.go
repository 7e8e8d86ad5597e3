package testenv

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// OperationsDoc is the operator's guide, whose metrics tables list every metric the binaries export, relative to
// the repository root.
const OperationsDoc = "docs/operations.md"

// DocumentedMetric is one row of the metrics tables of docs/operations.md.
type DocumentedMetric struct {
	// Name is the metric's name, as exported (a histogram's without _bucket, _sum, _count).
	Name string
	// Type is counter, gauge or histogram.
	Type string
	// Binaries are the binaries that export it; empty for a metric Prometheus makes itself (up).
	Binaries []string
	// PerObject: its series name objects (an `object_name` label) and exist only while an object is at fault, so a
	// scrape of a healthy process has none.
	PerObject bool
}

// Binaries are the three controller binaries, as the tables' "all" means them.
var Binaries = []string{"daemonset-controller", "workload-sizer", "pipeline-controller"}

// SeriesNames are the names a query may use for the metric: a histogram's series names.
func (m DocumentedMetric) SeriesNames() []string {
	if m.Type == "histogram" {
		return []string{m.Name + "_bucket", m.Name + "_sum", m.Name + "_count"}
	}
	return []string{m.Name}
}

// ExportedBy reports whether binary exports the metric.
func (m DocumentedMetric) ExportedBy(binary string) bool {
	for _, b := range m.Binaries {
		if b == binary {
			return true
		}
	}
	return false
}

// DocumentedMetrics reads the metrics tables of the operations guide under root: every table row of the
// "## Metrics" section whose first cell is a metric name in backquotes, with the columns Metric, Type, Labels,
// Binaries.
func DocumentedMetrics(root string) ([]DocumentedMetric, error) {
	f, err := os.Open(filepath.Join(root, OperationsDoc))
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var out []DocumentedMetric
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = line == "## Metrics"
			continue
		}
		if !in || !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) < 4 {
			return nil, fmt.Errorf("%s: a metrics row with %d columns: %s", OperationsDoc, len(cells), line)
		}
		m := DocumentedMetric{Name: strings.Trim(strings.TrimSpace(cells[0]), "`"), Type: strings.TrimSpace(cells[1]),
			PerObject: strings.Contains(cells[2], "`object_name`")}
		switch b := strings.TrimSpace(cells[3]); b {
		case "all":
			m.Binaries = Binaries
		case "Prometheus":
		default:
			for _, name := range strings.Split(b, ",") {
				m.Binaries = append(m.Binaries, strings.TrimSpace(name))
			}
		}
		switch m.Type {
		case "counter", "gauge", "histogram":
		default:
			return nil, fmt.Errorf("%s: %s has type %q, not counter, gauge or histogram", OperationsDoc, m.Name, m.Type)
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no metrics table under ## Metrics", OperationsDoc)
	}
	return out, nil
}
