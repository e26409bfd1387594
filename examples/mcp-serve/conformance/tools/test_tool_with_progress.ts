/**
 * Runs for a second and a half, so that agentos reports its progress (at
 * the start, every second, at the end): the MCP conformance suite's
 * test_tool_with_progress.
 * @tag mcp-conformance
 */
const SECOND_MS = 1000;

export default async function testToolWithProgress(): Promise<string> {
  await new Promise<void>((resolve) => setTimeout(resolve, SECOND_MS + SECOND_MS / 2));
  return "progress reported";
}
