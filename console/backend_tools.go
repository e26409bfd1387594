package console

// ToolsBackend is what the Tools pages read: the registry, a tool's
// versions, their diffs, risk and check findings, the gate's last report.
// Its methods are added with those pages (pages_tools.go).
type ToolsBackend interface{}
