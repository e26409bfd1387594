package console

// ProcsBackend is what the Processes and Cluster pages read: the process
// tree with supervisors, quotas and events; the cluster's members and
// forges in flight. Its methods are added with those pages
// (pages_procs.go).
type ProcsBackend interface{}
