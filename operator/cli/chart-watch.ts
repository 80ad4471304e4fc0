/**
 * Watches a chart directory for `sandbox --watch-chart`. Node's recursive `fs.watch` on Linux
 * follows inodes: once an editor replaces a file by a rename (vim, `sed -i`, JetBrains' safe
 * write), the watch on it is gone and later in-place writes to that file go unnoticed. chokidar
 * watches each directory, re-arms the watch of a file replaced by a rename and reports a
 * delete-then-create of the same path (an editor's save) as one change.
 */
import { watch, type FSWatcher } from 'chokidar'

/** Quiet time after the last event before `onChange` runs: an editor writes a file in several steps. */
export const SETTLE_MS = 200

/** A running watch; `close` stops it. */
export interface ChartWatch {
  /** Resolves once the initial scan is done: changes after that are reported. */
  ready: Promise<void>
  close(): Promise<void>
}

/**
 * Calls `onChange` once things are quiet after any file or directory under `dir` is added,
 * changed or removed. Editors' swap and backup files (`.swp`, `~`, `.tmp`) change nothing the
 * chart reads, but they are followed by the real file's own event, so nothing needs filtering.
 */
export function watchChart(dir: string, onChange: () => void, settleMs = SETTLE_MS): ChartWatch {
  let timer: NodeJS.Timeout | undefined
  const watcher: FSWatcher = watch(dir, { ignoreInitial: true, persistent: true })
  watcher.on('all', () => {
    clearTimeout(timer)
    timer = setTimeout(onChange, settleMs)
  })
  const ready = new Promise<void>((done) => watcher.once('ready', () => done()))
  return {
    ready,
    async close() {
      clearTimeout(timer)
      await watcher.close()
    },
  }
}
