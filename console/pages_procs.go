package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
)

// procsRoutes are the Processes and Cluster pages.
func (s *Server) procsRoutes() []route {
	return []route{
		{"GET /procs", s.page(s.procsPage)},
		{"GET /cluster", s.page(s.clusterPage)},
	}
}

// procRows is how many processes a page of the tree shows.
const procRows = 200

// procRow is one process in the tree: Indent draws its place (tree
// characters), Depth is its depth, Children counts its children.
type procRow struct {
	Proc
	Depth    int
	Indent   string
	Children int
}

// procsView is the Processes page's data: Node is the member whose
// processes it shows ("" for this node); NoAnswer says why that member did
// not answer (the rest is then empty).
type procsView struct {
	Node     string
	NoAnswer string
	Rows     []procRow
	Total    int
	Next     string
	Prev     string
	Events   []ProcEvent
}

// procsPage is GET /procs[?node=ADDR][&offset=N]: the process tree of this
// node or of the member at ADDR, by parent, and its kernel's recent
// events. A member that does not answer is shown as such (502).
func (s *Server) procsPage(w http.ResponseWriter, r *http.Request) {
	off, err := offsetOf(r)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, err)
		return
	}
	node := r.URL.Query().Get("node")
	v, err := s.procsOf(r, node)
	if errors.Is(err, ErrNoAnswer) {
		s.render(w, r, http.StatusBadGateway, "procs.html", procsView{Node: node, NoAnswer: err.Error()})
		return
	}
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	v.page(off)
	s.render(w, r, http.StatusOK, "procs.html", v)
}

// offsetOf is the request's offset parameter (0 without one).
func offsetOf(r *http.Request) (int, error) {
	v := r.URL.Query().Get("offset")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: offset %q: give a number of rows, 0 or more", ErrBadInput, v)
	}
	return n, nil
}

// procsOf reads node's process tree and its 100 most recent events,
// newest first.
func (s *Server) procsOf(r *http.Request, node string) (procsView, error) {
	who := sessionOf(r.Context()).who
	ps, err := s.b.Processes(r.Context(), who, node)
	if err != nil {
		return procsView{}, err
	}
	evs, err := s.b.Events(r.Context(), who, node, 0, 100)
	if err != nil {
		return procsView{}, err
	}
	slices.Reverse(evs) // newest first
	return procsView{Node: node, Rows: procTree(ps), Events: evs}, nil
}

// page keeps the rows of the page at off, and links the pages around it.
func (v *procsView) page(off int) {
	rows := v.Rows
	v.Total, v.Rows = len(rows), nil
	if off < len(rows) {
		v.Rows = rows[off:min(len(rows), off+procRows)]
	}
	base := "/procs?"
	if v.Node != "" {
		base += "node=" + url.QueryEscape(v.Node) + "&"
	}
	if off+procRows < len(rows) {
		v.Next = base + "offset=" + strconv.Itoa(off+procRows)
	}
	if off > 0 {
		v.Prev = base + "offset=" + strconv.Itoa(max(off-procRows, 0))
	}
}

// procTree orders ps as a tree, depth first, children by PID: a process
// whose parent is not in the table is a root.
func procTree(ps []Proc) []procRow {
	byPID := make(map[uint64]bool, len(ps))
	for _, p := range ps {
		byPID[p.PID] = true
	}
	kids := map[uint64][]Proc{}
	var roots []Proc
	for _, p := range ps {
		if p.Parent != 0 && byPID[p.Parent] && p.Parent != p.PID {
			kids[p.Parent] = append(kids[p.Parent], p)
		} else {
			roots = append(roots, p)
		}
	}
	byID := func(a, b Proc) int { return int(a.PID) - int(b.PID) }
	slices.SortFunc(roots, byID)
	out := make([]procRow, 0, len(ps))
	var walk func(p Proc, depth int, prefix string, last bool)
	walk = func(p Proc, depth int, prefix string, last bool) {
		indent, next := "", ""
		if depth > 0 {
			indent, next = prefix+"├─ ", prefix+"│  "
			if last {
				indent, next = prefix+"└─ ", prefix+"   "
			}
		}
		cs := kids[p.PID]
		slices.SortFunc(cs, byID)
		out = append(out, procRow{Proc: p, Depth: depth, Indent: indent, Children: len(cs)})
		for i, c := range cs {
			walk(c, depth+1, next, i == len(cs)-1)
		}
	}
	for _, p := range roots {
		walk(p, 0, "", true)
	}
	return out
}

// clusterPage is GET /cluster: the members, what each hosts, its version,
// and the forges in flight.
func (s *Server) clusterPage(w http.ResponseWriter, r *http.Request) {
	v, err := s.b.Cluster(r.Context(), sessionOf(r.Context()).who)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "cluster.html", v)
}
