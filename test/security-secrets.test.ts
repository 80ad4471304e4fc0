/**
 * Secret values never reach the operator's logs or events: the kubeconfig's bearer token and
 * basic-auth password, a Secret in the CR's namespace that the CR refers to, and secret-like values
 * in the CR's spec (applied into the pod template, changed, and failing to apply under injected
 * errors). The operator runs as a process at log level `trace`; everything it writes to stdout and
 * stderr and every Event in the namespace is searched for the strings, also in base64.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import t from 'tap'
import YAML from 'yaml'
import type { KubeObject } from '../operator/controller/client.ts'
import { memcachedCRD } from '../operator/api/crd.ts'
import { loadChart } from '../operator/render/chart.ts'
import { startSandbox } from '../operator/sandbox/index.ts'
import { clientFor } from './support/operator.ts'
import { MC, memcached, sleep, spawnOperator, waitConverged } from './fixtures/reliability/support.ts'

const TOKEN = 'kube-token-Zq8fW3nB7xL2vR9t'
const PASSWORD = 'basic-pass-Hk4mQ9sV1cX6'
const SECRET_VALUE = 'db-password-Pw7yT2kJ5nE8'
const SPEC_SECRET = 'annotation-secret-Ua3dG6hL0pZ4'
const SPEC_SECRET_2 = 'annotation-secret-Rb9eF1jM2qY7'
const ALL = [TOKEN, PASSWORD, SECRET_VALUE, SPEC_SECRET, SPEC_SECRET_2]
const variants = (s: string) => [s, Buffer.from(s).toString('base64'), Buffer.from(`x:${s}`).toString('base64').slice(4)]

t.test('tokens, passwords and secret values never appear in logs or events', async (t) => {
  const chart = loadChart()
  // The operator authenticates with TOKEN, a static token of the sandbox (as a --token-auth-file line).
  const sb = await startSandbox({ podReadyDelayMs: 20, installCRDs: [memcachedCRD(chart) as unknown as KubeObject], tokens: [{ token: TOKEN, user: 'ops', groups: ['system:masters'] }] })
  t.teardown(() => sb.close())
  const c = clientFor(sb, 'test-user/1', 'test-user')
  t.teardown(() => c.close())

  // The operator sends its credentials with every request and must never print them.
  const kc = YAML.parse(readFileSync(sb.kubeconfigPath, 'utf8')) as { users: { name: string; user: Record<string, unknown> }[] }
  kc.users[0]!.user = { token: TOKEN }
  kc.users.push({ name: 'basic', user: { username: 'admin', password: PASSWORD } })
  const kubeconfig = `${sb.kubeconfigPath}.secret`
  writeFileSync(kubeconfig, YAML.stringify(kc))

  await c.create({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'db-creds', namespace: 'default' }, stringData: { password: SECRET_VALUE } } as KubeObject)
  await c.create(memcached('sec', { size: 2, podAnnotations: { 'example.com/password-secret': 'db-creds', 'example.com/password': SPEC_SECRET } }))
  const op = spawnOperator(kubeconfig, ['--log-level', 'trace'])
  t.teardown(() => op.kill())
  await waitConverged(c, chart, 30_000)

  // A change of the secret-like value (logged as an update with its fields).
  await c.patch({ ...MC, namespace: 'default', name: 'sec' }, { spec: { podAnnotations: { 'example.com/password': SPEC_SECRET_2 } } }, { type: 'merge' })
  await waitConverged(c, chart, 30_000)
  // Failing applies under injected errors: logged as warnings (a 5xx is retried without being
  // reported on the CR until such failures have lasted five minutes, transient.ts).
  sb.faults.set({ errorRate: 1, verbs: ['patch'], resources: ['deployments'] })
  await c.patch({ ...MC, namespace: 'default', name: 'sec' }, { spec: { podAnnotations: { 'example.com/password': SPEC_SECRET } } }, { type: 'merge' })
  for (let i = 0; i < 200; i++) {
    if (op.lines.filter((l) => l.includes('"reason":"ServerError"')).length >= 2) break
    await sleep(50)
  }
  sb.faults.set({})
  await waitConverged(c, chart, 30_000)
  await sleep(200)

  const logs = op.lines.join('\n')
  // What was logged is what the scan below reads: the start, each object created and updated.
  t.match(logs, /"object":"Deployment default\/sec","msg":"created"/, 'the creates were logged')
  t.match(logs, /"object":"Deployment default\/sec","fields":\[[^\]]*\],"msg":"updated"/, 'the update (with its fields) was logged')
  t.match(logs, /"msg":"starting"/, 'the start line names the cluster')
  t.match(logs, /"reason":"ServerError","err":"Deployment default\/sec: [^"]*","failingForMs":\d+,"msg":"reconcile failed transiently/, 'the failed applies were logged')
  const events = [
    ...(await c.list({ apiVersion: 'v1', kind: 'Event' }, { namespace: 'default' })).items,
    ...(await c.list({ apiVersion: 'events.k8s.io/v1', kind: 'Event' }, { namespace: 'default' })).items,
  ]
  t.ok(events.length > 0, `events were recorded (${events.length})`)
  const eventText = JSON.stringify(events)
  for (const s of ALL) {
    for (const v of variants(s)) {
      t.notOk(logs.includes(v), `logs do not contain ${s}${v === s ? '' : ' (base64)'}`)
      t.notOk(eventText.includes(v), `events do not contain ${s}${v === s ? '' : ' (base64)'}`)
    }
  }
  // The values did reach the cluster where they belong: the test would be empty otherwise.
  const dep = await c.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: 'sec' })
  t.equal((dep.spec as { template: { metadata: { annotations: Record<string, string> } } }).template.metadata.annotations['example.com/password'], SPEC_SECRET, 'the spec value was applied')
  await op.kill('SIGTERM')
  t.equal((await op.exited).code, 0)
  t.notOk(op.lines.join('\n').includes(TOKEN), 'nor in the shutdown lines')
})
