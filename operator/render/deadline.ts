/**
 * A time limit for running templates: a chart's `<% while (true) {} %>` must not hang `render`,
 * `lint` or the sandbox's `--watch-chart`. Templates run in this process (they are compiled
 * functions), and only V8 can stop a loop that never yields: node:vm's `timeout` arms a watchdog
 * that terminates the script. Arming it costs some 0.2 ms, so a caller puts a whole batch of
 * renders under one deadline rather than each template.
 */
import { lazyRequire as require } from './lazy-require.ts'

/** Rendering went on past its deadline: a template that does not end. */
export class DeadlineExceeded extends Error {
  override name = 'DeadlineExceeded'
  readonly ms: number
  constructor(ms: number) {
    super(`did not finish within ${ms / 1000} s (a template that loops forever?)`)
    this.ms = ms
  }
}

type VM = typeof import('node:vm')

// Asked every time: the answer is true while the snapshot is built and false in a process started from it.
const building = (): boolean => (require('node:v8') as typeof import('node:v8')).startupSnapshot.isBuildingSnapshot()

let runner: { script: import('node:vm').Script; context: { run: (() => unknown) | undefined } } | undefined
let depth = 0

/**
 * Runs `fn` and returns what it returns; stops it and throws {@link DeadlineExceeded} once `ms`
 * have passed. Nested calls run under the outer deadline.
 */
export function withDeadline<T>(ms: number, fn: () => T): T {
  // A start-up snapshot holds one context only (node's Environment::Serialize): its warm-up renders run bare.
  if (depth > 0 || building()) return fn()
  if (runner === undefined) {
    const vm = require('node:vm') as VM
    const context = vm.createContext({ run: undefined }) as { run: (() => unknown) | undefined }
    runner = { script: new vm.Script('run()', { filename: 'memcached-operator-render-deadline' }), context }
  }
  const { script, context } = runner
  context.run = fn
  depth++
  try {
    return script.runInContext(context as import('node:vm').Context, { timeout: ms, breakOnSigint: false }) as T
  } catch (err) {
    if ((err as { code?: unknown }).code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') throw new DeadlineExceeded(ms)
    throw err
  } finally {
    depth--
    context.run = undefined
  }
}
