import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { existsSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import t from 'tap'
import { runCli } from '../operator/cli/program.ts'
import { runSandbox, startSandboxCommand } from '../operator/cli/sandbox.ts'
import { captureIO } from './support/io.ts'
import { kubectlPath } from './support/tools.ts'

const root = resolve(import.meta.dirname, '..')

t.test('sandbox serves the Memcached CRD and prints a kubeconfig that kubectl uses', async (t) => {
  const io = captureIO()
  const kubeconfig = join(mkdtempSync(join(tmpdir(), 'mc-sb-')), 'kubeconfig')
  const sandbox = await startSandboxCommand({ kubeconfigOut: kubeconfig, podReadyDelay: '10' }, io)
  t.teardown(() => sandbox.close())
  t.match(io.out(), new RegExp(`kubeconfig: ${kubeconfig}\\n`))
  t.match(io.out(), /kubectl --kubeconfig \S+ get mc,deploy,pods -o wide/)
  // Asynchronously: the sandbox answers from this very process.
  const kubectl = async (...args: string[]) => (await promisify(execFile)(kubectlPath(), ['--kubeconfig', kubeconfig, ...args], { cwd: root, encoding: 'utf8' })).stdout
  t.equal(await kubectl('get', 'crd', 'memcacheds.cache.example.com', '-o', 'jsonpath={.status.conditions[?(@.type=="Established")].status}'), 'True')
  t.match(await kubectl('apply', '-f', 'kustomize/samples/cache_v1alpha1_memcached.yaml'), /memcached-sample created/)
  t.match(await kubectl('get', 'mc'), /NAME\s+SIZE\s+READY\s+AGE\nmemcached-sample\s+3\s/)
})

t.test('sandbox runs until it is signalled, then closes', async (t) => {
  const io = captureIO()
  const controller = new AbortController()
  const kubeconfig = join(mkdtempSync(join(tmpdir(), 'mc-sb-')), 'kubeconfig')
  const running = runSandbox({ kubeconfigOut: kubeconfig }, io, controller.signal)
  while (!io.out().includes('Stop with Ctrl-C')) await new Promise((r) => setTimeout(r, 10))
  const url = /serving on (\S+)/.exec(io.out())![1]!
  t.equal((await fetch(`${url}/version`)).status, 200)
  controller.abort()
  t.equal(await running, 0)
  await t.rejects(fetch(`${url}/version`), 'the server is gone')
  t.ok(existsSync(kubeconfig), 'a kubeconfig written where asked is left for the user')
})

t.test('sandbox flags are checked', async (t) => {
  for (const args of [['sandbox', '--port', 'x'], ['sandbox', '--port', '70000'], ['sandbox', '--pod-ready-delay', '-1']]) {
    const io = captureIO()
    t.equal(await runCli(args, io), 2, args.join(' '))
  }
})
