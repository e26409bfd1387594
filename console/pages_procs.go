package console

import (
	"fmt"
	"net/http"
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

// procsView is the Processes page's data.
type procsView struct {
	Rows   []procRow
	Total  int
	Next   string
	Prev   string
	Events []ProcEvent
}

// procsPage is GET /procs[?offset=N]: the process tree, by parent, and the
// kernel's recent events.
func (s *Server) procsPage(w http.ResponseWriter, r *http.Request) {
	off := 0
	if v := r.URL.Query().Get("offset"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			s.fail(w, r, http.StatusBadRequest, fmt.Errorf("%w: offset %q: give a number of rows, 0 or more", ErrBadInput, v))
			return
		}
		off = n
	}
	who := sessionOf(r.Context()).who
	ps, err := s.b.Processes(r.Context(), who)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	evs, err := s.b.Events(r.Context(), who, 0, 100)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	slices.Reverse(evs) // newest first
	rows := procTree(ps)
	v := procsView{Total: len(rows), Events: evs}
	if off < len(rows) {
		v.Rows = rows[off:min(len(rows), off+procRows)]
	}
	if off+procRows < len(rows) {
		v.Next = "/procs?offset=" + strconv.Itoa(off+procRows)
	}
	if off > 0 {
		v.Prev = "/procs?offset=" + strconv.Itoa(max(off-procRows, 0))
	}
	s.render(w, r, http.StatusOK, "procs.html", v)
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
