package check

// fibTool is the reference tool: valid, risk low.
const fibTool = `/** Returns the n-th Fibonacci number. */
export default function fib(args: { n: number }): number {
  const n = args.n;
  if (n <= 1) return n;
  let a = 0, b = 1;
  for (let i = 2; i <= n; i++) {
    const temp = a + b;
    a = b;
    b = temp;
  }
  return b;
}
`
