/** A point in time to work towards, for polling loops. */
export function deadlineAfter(ms: number) {
  const end = Date.now() + ms;
  return {
    passed: () => Date.now() >= end,
    left: () => Math.max(0, end - Date.now()),
    sleep: (step: number) =>
      new Promise<void>((r) => setTimeout(r, Math.min(step, Math.max(0, end - Date.now())))),
  };
}
