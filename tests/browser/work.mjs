// The browser tests' working directory: where dsa, dsa-sim and their SQLite files live during a
// run. Removed at the end, after its processes have exited; their logs are kept in `out` first
// (`test-output/`, beside the screenshots) so that a failed run can still be read.
import fs from 'node:fs';
import path from 'node:path';

/** Waits (at most `ms`) for every spawned child that is still running to exit. */
async function exited(children, ms) {
  const running = children.filter((c) => typeof c.exitCode !== 'undefined' && c.exitCode === null && c.signalCode === null);
  const each = running.map((c) => new Promise((resolve) => c.once('exit', resolve)));
  await Promise.race([Promise.all(each), new Promise((resolve) => setTimeout(resolve, ms))]);
}

/**
 * Stops `children` (SIGTERM, last started first), waits for them, copies the `*.log` files of
 * `work` into `out` as `<prefix>-<name>.log`, then removes `work`.
 */
export async function cleanUp(children, work, out, prefix) {
  for (const c of [...children].reverse()) c.kill('SIGTERM');
  await exited(children, 10000);
  if (!work || !fs.existsSync(work)) return;
  fs.mkdirSync(out, { recursive: true });
  for (const name of fs.readdirSync(work)) {
    if (name.endsWith('.log')) fs.copyFileSync(path.join(work, name), path.join(out, `${prefix}-${name}`));
  }
  fs.rmSync(work, { recursive: true, force: true });
}
