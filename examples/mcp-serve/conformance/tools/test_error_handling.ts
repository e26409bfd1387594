/**
 * Always fails: the MCP conformance suite's test_error_handling.
 * @tag mcp-conformance
 */
export default function testErrorHandling(): string {
  throw new Error("This tool intentionally returns an error for testing");
}
