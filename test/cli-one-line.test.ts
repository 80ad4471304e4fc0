/**
 * Where docs/cli.md promises one line and an exit code, bad input gets one line, not a stack
 * trace: a YAML alias bomb (in CRs and values), a port in use, a mistyped fault setting.
 */
import { createServer, type Server } from 'node:net'
import { writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import t, { type Test } from 'tap'
import { runCli } from '../operator/cli/program.ts'
import { startSandbox } from '../operator/sandbox/index.ts'
import { captureIO } from './support/io.ts'
import { tempDir } from './support/tmp.ts'

const root = resolve(import.meta.dirname, '..')
const sample = join(root, 'kustomize/samples/cache_v1alpha1_memcached.yaml')

/** A document whose aliases fan out to 9^9 nodes (a "billion laughs"). */
function bomb(): string {
  const lines = ['a0: &a0 [x, x, x, x, x, x, x, x, x]']
  for (let i = 1; i < 9; i++) lines.push(`a${i}: &a${i} [${Array(9).fill(`*a${i - 1}`).join(', ')}]`)
  return `apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: x}\nspec:\n  size: 1\n  extra:\n${lines.map((l) => `    ${l}`).join('\n')}\n`
}

const oneLine = (text: string) => text.trimEnd().split('\n').filter((l) => l !== '(add --help for usage)').length === 1

t.test('a YAML alias bomb is one line naming the file, in render, lint and --values', async (t) => {
  const file = join(tempDir('mc-bomb-'), 'bomb.yaml')
  writeFileSync(file, bomb())
  const values = join(tempDir('mc-bomb-'), 'values.yaml')
  writeFileSync(values, bomb().slice(bomb().indexOf('  extra:')).replace(/^  /gm, ''))
  for (const args of [['render', '-f', file], ['render', '-f', sample, '--values', values], ['lint', '-f', file]]) {
    const io = captureIO()
    t.equal(await runCli(args, io), 1, args.join(' '))
    t.match(io.err(), /bomb\.yaml:\d+: Excessive alias count|values\.yaml:\d+: Excessive alias count/, args.join(' '))
    t.notMatch(io.err(), /\n\s+at /, 'no stack trace')
    t.equal(io.out(), '')
  }
})

async function busyPort(t: Test): Promise<number> {
  const server: Server = createServer()
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
  t.teardown(() => new Promise<void>((done) => server.close(() => done())))
  return (server.address() as { port: number }).port
}

t.test('sandbox --port on a port in use exits 1 with one line; a mistyped fault setting is a usage error', async (t) => {
  const port = await busyPort(t)
  const io = captureIO()
  t.equal(await runCli(['sandbox', '--port', String(port), '--kubeconfig-out', join(tempDir('mc-port-'), 'kc')], io), 1)
  t.match(io.err(), new RegExp(`^error: --port ${port}: cannot listen on 127\\.0\\.0\\.1:${port}: the address is already in use\\n$`))
  const faults = captureIO()
  t.equal(await runCli(['sandbox', '--faults', 'error-rat=0.5'], faults), 2)
  t.match(faults.err(), /^error: --faults: unknown fault setting "error-rat"\n/)
  t.ok(oneLine(faults.err()))
})

t.test('run --metrics-bind-address on a port in use exits 1 with one line', async (t) => {
  const sandbox = await startSandbox({})
  t.teardown(() => sandbox.close())
  const port = await busyPort(t)
  const io = captureIO()
  t.equal(await runCli(['run', '--kubeconfig', sandbox.kubeconfigPath, '--metrics-bind-address', `127.0.0.1:${port}`, '--health-probe-bind-address', '0'], io), 1)
  t.match(io.err(), new RegExp(`^error: --metrics-bind-address 127\\.0\\.0\\.1:${port} / --health-probe-bind-address 0: cannot listen on 127\\.0\\.0\\.1:${port}: the address is already in use\\n$`))
})
