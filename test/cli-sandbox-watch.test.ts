/**
 * `sandbox --watch-chart` sees every save of a chart file, however the editor saves it: in place
 * (VS Code, `echo >>`, Python's open('w')), by an atomic rename (`sed -i`), or by the safe writes
 * of vim and JetBrains (a backup and a temporary file renamed around the original) — several in a
 * row on the same file, which Node's recursive fs.watch misses once the file was replaced.
 */
import { execFile } from 'node:child_process'
import { readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import pino from 'pino'
import t from 'tap'
import { startSandboxCommand } from '../operator/cli/sandbox.ts'
import { chartWith } from './support/chart.ts'
import { captureIO } from './support/io.ts'
import { eventually } from './support/operator.ts'
import { tempDir } from './support/tmp.ts'

const quiet = pino({ level: 'silent' })

t.test('--watch-chart applies every save: in place, renamed over, and editor safe writes, in a row', async (t) => {
  const dir = chartWith({})
  const io = captureIO()
  const running = await startSandboxCommand({ kubeconfigOut: join(tempDir('mc-sbw-'), 'kubeconfig'), chart: dir, watchChart: true, podReadyDelay: '10' }, io, quiet)
  t.teardown(() => running.close())
  const connections = async (): Promise<string | undefined> => {
    const res = await running.sandbox.cluster.handle({ verb: 'get', group: 'apps', version: 'v1', resource: 'deployments', namespace: 'default', name: 'memcached-sample', query: new URLSearchParams(), userAgent: 'test' } as Parameters<typeof running.sandbox.cluster.handle>[0])
    if (res.status !== 200) return undefined
    const args = (res.body as { spec: { template: { spec: { containers: { args: string[] }[] } } } }).spec.template.spec.containers[0]!.args
    return args[args.indexOf('-c') + 1]
  }
  await eventually('the Deployment', async () => ((await connections()) === '1024' ? true : undefined))
  const values = join(dir, 'values.yaml')
  // maxConnections (-c) rolls the pods; a larger memoryMB alone would be taken in place, the template kept.
  let current = 1024
  const set = (text: string, to: number) => text.replace(new RegExp(`^maxConnections: ${current}$`, 'm'), `maxConnections: ${to}`)

  const saves: [string, (to: number) => Promise<void> | void][] = [
    ['sed -i (a temporary file renamed over it)', async (to) => void (await promisify(execFile)('sed', ['-i', `s/^maxConnections: ${current}$/maxConnections: ${to}/`, values]))],
    ['an in-place write after the rename', (to) => writeFileSync(values, set(readFileSync(values, 'utf8'), to))],
    ['another in-place write', (to) => writeFileSync(values, set(readFileSync(values, 'utf8'), to))],
    [
      'a JetBrains safe write (write a temporary file, rename the original to a backup, rename the temporary file, delete the backup)',
      (to) => {
        const text = set(readFileSync(values, 'utf8'), to)
        writeFileSync(`${values}___jb_tmp___`, text)
        renameSync(values, `${values}___jb_old___`)
        renameSync(`${values}___jb_tmp___`, values)
        unlinkSync(`${values}___jb_old___`)
      },
    ],
    [
      'a vim write (rename the original to a backup, write a new file, delete the backup)',
      (to) => {
        const text = set(readFileSync(values, 'utf8'), to)
        renameSync(values, `${values}~`)
        writeFileSync(values, text)
        unlinkSync(`${values}~`)
      },
    ],
    ['an in-place write after the editors', (to) => writeFileSync(values, set(readFileSync(values, 'utf8'), to))],
    ['sed -i again', async (to) => void (await promisify(execFile)('sed', ['-i', `s/^maxConnections: ${current}$/maxConnections: ${to}/`, values]))],
    ['and in place once more', (to) => writeFileSync(values, set(readFileSync(values, 'utf8'), to))],
  ]
  for (const [how, save] of saves) {
    const to = current + 1
    const reloads = io.out().split('changed: re-rendering').length
    await save(to)
    current = to
    await eventually(`${how}: maxConnections ${to} applied`, async () => ((await connections()) === String(to) ? true : undefined), 10_000)
    t.ok(io.out().split('changed: re-rendering').length > reloads, `${how}: the reload is announced`)
  }
})

t.test('--watch-chart refuses a chart whose template never ends, and keeps serving with the previous one', async (t) => {
  const dir = chartWith({})
  const io = captureIO()
  const running = await startSandboxCommand({ kubeconfigOut: join(tempDir('mc-sbw-'), 'kubeconfig'), chart: dir, watchChart: true, podReadyDelay: '10', chartDeadlineMs: 300 }, io, quiet)
  t.teardown(() => running.close())
  const connections = async (): Promise<string | undefined> => {
    const res = await running.sandbox.cluster.handle({ verb: 'get', group: 'apps', version: 'v1', resource: 'deployments', namespace: 'default', name: 'memcached-sample', query: new URLSearchParams(), userAgent: 'test' } as Parameters<typeof running.sandbox.cluster.handle>[0])
    if (res.status !== 200) return undefined
    const args = (res.body as { spec: { template: { spec: { containers: { args: string[] }[] } } } }).spec.template.spec.containers[0]!.args
    return args[args.indexOf('-c') + 1]
  }
  await eventually('the Deployment', async () => ((await connections()) === '1024' ? true : undefined))
  const loop = join(dir, 'templates', 'configmap-loop.ejs')
  writeFileSync(loop, 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n<% while (true) {} %>\n')
  await eventually('the endless template reported', () => (io.err().includes('did not finish') ? true : undefined), 10_000)
  t.match(io.err(), /chart \S+ not reloaded:\n  - minimal values \(size 1\): templates\/configmap-loop\.ejs: did not finish within 0\.3 s/)
  unlinkSync(loop)
  const values = join(dir, 'values.yaml')
  writeFileSync(values, readFileSync(values, 'utf8').replace(/^maxConnections: 1024$/m, 'maxConnections: 2048'))
  await eventually('the next save applied', async () => ((await connections()) === '2048' ? true : undefined), 10_000)
})
