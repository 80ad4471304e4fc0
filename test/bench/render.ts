/**
 * `npm run bench:render`: render throughput in-process, and whole-process wall time of
 * `memcached-operator render -f <sample>` beside `helm template` of the same chart written for Helm.
 * Prints figures; asserts nothing.
 */
import { spawnSync } from 'node:child_process'
import { join, resolve } from 'node:path'
import { loadChart } from '../../operator/render/chart.ts'
import { renderInstance } from '../../operator/render/engine.ts'
import { helmPath } from '../support/tools.ts'

const root = resolve(import.meta.dirname, '..', '..')
const sample = join(root, 'kustomize/samples/cache_v1alpha1_memcached.yaml')
const runs = Number(process.env.BENCH_RUNS ?? 21)
// Same reason as the CLI: `yaml` reads process.env per token.
process.env = { ...process.env }

function throughput(label: string, render: (i: number) => void, seconds = 2): number {
  for (let i = 0; i < 500; i++) render(i)
  let n = 0
  const start = performance.now()
  while (performance.now() - start < seconds * 1000) {
    for (let j = 0; j < 100; j++) render(n++)
  }
  const perSecond = n / ((performance.now() - start) / 1000)
  console.log(`${label.padEnd(58)} ${perSecond.toFixed(0).padStart(7)} renders/s`)
  return perSecond
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b)
  const mid = s.length >> 1
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}

function wallTime(cmd: string, args: readonly string[]): number {
  const start = process.hrtime.bigint()
  const r = spawnSync(cmd, args, { cwd: root, encoding: 'utf8' })
  const ms = Number(process.hrtime.bigint() - start) / 1e6
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed: ${r.stderr}`)
  return ms
}

const chart = loadChart()
console.log(`node ${process.version}, one core (renders run on the main thread)\n`)
console.log('In-process render of the sample CR (size: 3; Service, Deployment, PodDisruptionBudget)')
throughput('  same CR again and again (template output parse cache hits)', () => renderInstance(chart, { name: 'memcached-sample', namespace: 'default', spec: { size: 3 } }))
throughput('  a different CR name every time (no cache hit)', (i) => renderInstance(chart, { name: `memcached-${i}`, namespace: 'default', spec: { size: 3 } }))

const helm = helmPath()
const ours = [process.execPath, [join(root, 'operator/cli/main.js'), 'render', '-f', sample]] as const
const theirs = [helm, ['template', 'memcached-sample', join(root, 'test/bench/helm-memcached'), '--namespace', 'default']] as const
for (let i = 0; i < 3; i++) {
  wallTime(...ours)
  wallTime(...theirs)
}
const a: number[] = []
const b: number[] = []
for (let i = 0; i < runs; i++) {
  a.push(wallTime(...ours))
  b.push(wallTime(...theirs))
}
console.log(`\nWhole process, ${runs} runs each after 3 warm-ups, interleaved (milliseconds)`)
console.log(`  memcached-operator render -f sample   median ${median(a).toFixed(1)}  min ${Math.min(...a).toFixed(1)}  max ${Math.max(...a).toFixed(1)}`)
console.log(`  helm template (helm ${spawnSync(helm, ['version', '--short'], { encoding: 'utf8' }).stdout.trim()})   median ${median(b).toFixed(1)}  min ${Math.min(...b).toFixed(1)}  max ${Math.max(...b).toFixed(1)}`)
console.log(`  ratio ours/helm (median)              ${(median(a) / median(b)).toFixed(2)}`)
