/**
 * `npm run bench:render`: render throughput in-process, and whole-process wall time of
 * `memcached-operator render -f <sample>` (from the start-up snapshot, from the sources, and through
 * `npx` as the README gives it) beside `helm template` of the same chart written for Helm.
 * Prints figures; asserts nothing.
 */
import { spawnSync } from 'node:child_process'
import { chmodSync, copyFileSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { loadChart } from '../../operator/render/chart.ts'
import { renderInstance } from '../../operator/render/engine.ts'
import { helmPath } from '../support/tools.ts'

const root = resolve(import.meta.dirname, '..', '..')
const sample = join(root, 'kustomize/samples/cache_v1alpha1_memcached.yaml')
const runs = Number(process.env.BENCH_RUNS ?? 31)
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

function wallTime(cmd: string, args: readonly string[], env?: NodeJS.ProcessEnv): number {
  const start = process.hrtime.bigint()
  const r = spawnSync(cmd, args, { cwd: root, encoding: 'utf8', env })
  const ms = Number(process.hrtime.bigint() - start) / 1e6
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed: ${r.stderr}`)
  return ms
}

const chart = loadChart()
console.log(`node ${process.version}, one core (renders run on the main thread)\n`)
console.log('In-process render of the sample CR (size: 3; Service, Deployment, PodDisruptionBudget)')
throughput('  same CR again and again (template output parse cache hits)', () => renderInstance(chart, { name: 'memcached-sample', namespace: 'default', spec: { size: 3 } }))
throughput('  a different CR name every time (no cache hit)', (i) => renderInstance(chart, { name: `memcached-${i}`, namespace: 'default', spec: { size: 3 } }))

// The executable as npm links it: `render` starts from the start-up snapshot that npm install builds.
const bin = join(root, 'operator/cli/memcached-operator')
const env = { ...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}` }
// Both executables are written anew before they are compared: this machine starts a recently
// written executable 3–6 ms faster than the same bytes written long ago (how the page cache holds
// it), which would otherwise favour whichever was installed last. The snapshot is built again (a
// build waits for one that runs), helm is copied.
console.log('\nbuilding the snapshot and copying helm, so that both executables are freshly written')
const buildStart = performance.now()
const built = spawnSync(process.execPath, [join(root, 'operator/snapshot/build.ts')], { cwd: root, encoding: 'utf8', env })
const buildSeconds = (performance.now() - buildStart) / 1000
if (built.status !== 0) {
  process.stderr.write(built.stderr)
  process.exit(1)
}
const how = spawnSync(bin, ['render', '-f', sample], { cwd: root, encoding: 'utf8', env: { ...env, MEMCACHED_OPERATOR_DEBUG_START: '1' } }).stderr.trim()
if (!how.includes('the render snapshot')) throw new Error(`render does not start from the snapshot: ${how}`)
const helmDir = mkdtempSync(join(tmpdir(), 'bench-helm-'))
process.on('exit', () => rmSync(helmDir, { recursive: true, force: true }))
const helm = join(helmDir, 'helm')
copyFileSync(helmPath(), helm)
chmodSync(helm, 0o755)
const sourcesEnv = { ...env, MEMCACHED_OPERATOR_SNAPSHOT: 'off' }
const variants = [
  { label: 'memcached-operator render -f sample', cmd: bin, args: ['render', '-f', sample], env, times: [] as number[] },
  { label: '  the same from the sources (SNAPSHOT=off)', cmd: bin, args: ['render', '-f', sample], env: sourcesEnv, times: [] as number[] },
  { label: `helm template (helm ${spawnSync(helm, ['version', '--short'], { encoding: 'utf8' }).stdout.trim()})`, cmd: helm, args: ['template', 'memcached-sample', join(root, 'test/bench/helm-memcached'), '--namespace', 'default'], env, times: [] as number[] },
  // The invocation the README gives: npm finds the executable first, which is most of the time.
  { label: 'npx memcached-operator render -f sample', cmd: 'npx', args: ['memcached-operator', 'render', '-f', sample], env, times: [] as number[] },
]
for (let i = 0; i < 3; i++) for (const v of variants) wallTime(v.cmd, v.args, v.env)
for (let i = 0; i < runs; i++) for (const v of variants) v.times.push(wallTime(v.cmd, v.args, v.env))
console.log(`\nWhole process, ${runs} runs each after 3 warm-ups, interleaved (milliseconds)`)
for (const v of variants) console.log(`  ${v.label.padEnd(44)} median ${median(v.times).toFixed(1).padStart(6)}  min ${Math.min(...v.times).toFixed(1).padStart(6)}  max ${Math.max(...v.times).toFixed(1).padStart(6)}`)
console.log(`  ratio ours/helm (median)                     ${(median(variants[0]!.times) / median(variants[2]!.times)).toFixed(2)}`)
console.log(`  ratio from the sources/helm (median)         ${(median(variants[1]!.times) / median(variants[2]!.times)).toFixed(2)}`)
console.log(`  ratio through npx/helm (median)              ${(median(variants[3]!.times) / median(variants[2]!.times)).toFixed(2)}`)

// What the snapshot costs, beside what it saves (the medians above): its code, the time npm
// install spends building it, and its disk (the build `current` names, and the previous one kept).
const snapshotDir = resolve(process.env.MEMCACHED_OPERATOR_SNAPSHOT_DIR || join(root, 'node_modules', '.cache', 'memcached-operator'))
const lines = (files: string[]) => files.reduce((n, f) => n + readFileSync(join(root, f), 'utf8').split('\n').length - 1, 0)
const code = ['operator/cli/memcached-operator', ...readdirSync(join(root, 'operator/snapshot')).map((f) => `operator/snapshot/${f}`)]
const tests = ['test/cli-snapshot.test.ts', 'test/cli-snapshot-parts.test.ts']
// Bytes a build adds to the disk: its files but the hard link to the node binary that built it.
const own = (dir: string) => readdirSync(dir).reduce((n, f) => {
  const st = statSync(join(dir, f))
  return n + (st.isFile() && st.nlink === 1 ? st.size : 0)
}, 0) / 2 ** 20
const builds = readdirSync(snapshotDir).filter((f) => f.startsWith('build-'))
console.log(`\nThe snapshot's costs`)
console.log(`  code: ${lines(code)} lines (${code.length} files), tests: ${lines(tests)} lines`)
console.log(`  build (part of npm install): ${buildSeconds.toFixed(1)} s`)
console.log(`  disk: ${own(realpathSync(join(snapshotDir, 'current'))).toFixed(0)} MiB the current build (its node is a hard link), ${builds.reduce((n, b) => n + own(join(snapshotDir, b)), 0).toFixed(0)} MiB with the previous one kept`)
console.log(`  saves per render: ${(median(variants[1]!.times) - median(variants[0]!.times)).toFixed(1)} ms (median from the sources minus median from the snapshot)`)
