/**
 * Returns a fixed text: the MCP conformance suite's test_simple_text.
 * @tag mcp-conformance
 */
export default function testSimpleText(): string {
  return "This is a simple text response for testing.";
}
