/**
 * Sharding under the shipped RBAC: each shard elects its leader on its own Lease, which only
 * kustomize/sharded's per-shard Role lets it take. With kustomize/default's RBAC alone a shard
 * with its own --leader-election-id is refused its Lease (403): it must say so — an error log
 * line, `leader_election_master_status{name}` 0, and /readyz failing — instead of idling as a
 * standby that looks healthy. With kustomize/sharded's RBAC both shards lead, each its own
 * Lease, every request allowed and each shard Role needed.
 */
import { execFile } from 'node:child_process'
import { Writable } from 'node:stream'
import http from 'node:http'
import pino from 'pino'
import t, { type Test } from 'tap'
import { memcachedCRD } from '../operator/api/crd.ts'
import type { KubeObject } from '../operator/controller/client.ts'
import { packageVersion } from '../operator/cli/io.ts'
import { startOperator, type Operator, type RunOptions } from '../operator/cli/run.ts'
import { loadChart } from '../operator/render/chart.ts'
import { startSandbox, type Sandbox } from '../operator/sandbox/index.ts'
import { allowing, grantsFor, kustomize, type Attributes } from './deploy-manifests.ts'
import { captureIO } from './support/io.ts'
import { clientFor, eventually } from './support/operator.ts'
import { kubectlPath } from './support/tools.ts'

const NS = 'memcached-operator-system'
const SA = 'memcached-operator-controller-manager'
const UA = `memcached-operator/${packageVersion()}`
const MC = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached' } as const
const chart = loadChart()

async function sandboxWith(t: Test, dir: string): Promise<{ sandbox: Sandbox; asOperator: string }> {
  const sandbox = await startSandbox({ podReadyDelayMs: 10, requestLogSize: 100_000, installCRDs: [memcachedCRD(chart) as unknown as KubeObject] })
  t.teardown(() => sandbox.close())
  const user = clientFor(sandbox, 'test-user/1', 'test-user')
  t.teardown(() => user.close())
  await user.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } })
  const rbac = kustomize(dir).filter((o) => o.kind === 'ServiceAccount' || o.apiVersion === 'rbac.authorization.k8s.io/v1')
  await new Promise<void>((done, fail) => {
    const kubectl = execFile(kubectlPath(), ['--kubeconfig', sandbox.kubeconfigPath, 'apply', '--server-side', '-f', '-'], (err) => (err ? fail(err) : done()))
    kubectl.stdin!.end(rbac.map((o) => JSON.stringify(o)).join('\n'))
  })
  return { sandbox, asOperator: await sandbox.kubeconfigFor({ user: `system:serviceaccount:${NS}:${SA}` }) }
}

/** The args of a Deployment of `dir` as RunOptions (the flags the shards differ by). */
function shardOptions(dir: string, deployment: string, kubeconfig: string): RunOptions {
  const d = kustomize(dir).find((o) => o.kind === 'Deployment' && o.metadata.name === deployment)
  const args = ((d?.spec as { template: { spec: { containers: { args: string[] }[] } } }).template.spec.containers[0]?.args ?? [])
  const flag = (name: string) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3)
  const selector = flag('selector')
  return {
    kubeconfig,
    namespace: [],
    ...(selector !== undefined ? { selector } : {}),
    concurrency: '1',
    resyncPeriod: '10m',
    leaderElect: args.includes('--leader-elect'),
    leaderElectionNamespace: NS,
    leaderElectionId: flag('leader-election-id') ?? 'memcached-operator-leader',
    metricsBindAddress: '127.0.0.1:0',
    healthProbeBindAddress: '127.0.0.1:0',
  }
}

function get(address: string, path: string): Promise<{ status: number; body: string }> {
  const i = address.lastIndexOf(':')
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port: Number(address.slice(i + 1)), path, agent: false }, (res) => {
        let body = ''
        res.on('data', (c: Buffer) => (body += c.toString('utf8')))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
      })
      .on('error', reject)
  })
}

async function start(t: Test, opts: RunOptions, lines: string[] = []): Promise<Operator> {
  const destination = new Writable({ write: (chunk: Buffer, _e, done) => (lines.push(...chunk.toString('utf8').split('\n').filter(Boolean)), done()) })
  const op = await startOperator(opts, captureIO(), pino({ level: 'info' }, destination), () => chart)
  t.teardown(() => op.stop())
  return op
}

t.test('kustomize/sharded: both shards lead, each on its own Lease, every request allowed and each shard\'s Role needed', async (t) => {
  const { sandbox, asOperator } = await sandboxWith(t, 'sharded')
  const user = clientFor(sandbox, 'test-user/1', 'test-user')
  t.teardown(() => user.close())
  const first = shardOptions('sharded', 'memcached-operator-controller-manager', asOperator)
  const b = shardOptions('sharded', 'memcached-operator-controller-manager-shard-b', asOperator)
  t.equal(first.selector, 'cache.example.com/shard!=b')
  t.equal(b.selector, 'cache.example.com/shard=b')
  t.equal(b.leaderElectionId, 'memcached-operator-leader-shard-b')
  const ops = [await start(t, first), await start(t, b)]
  const holder = async (name: string) => ((await user.get({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', namespace: NS, name })).spec as { holderIdentity?: string }).holderIdentity
  await eventually('shard a leads', async () => ((await holder('memcached-operator-leader').catch(() => undefined)) === ops[0]!.elector?.identity ? true : undefined))
  await eventually('shard b leads', async () => ((await holder('memcached-operator-leader-shard-b').catch(() => undefined)) === ops[1]!.elector?.identity ? true : undefined))
  for (const [name, labels] of [['in-a', {}], ['in-b', { 'cache.example.com/shard': 'b' }]] as const) await user.create({ ...MC, metadata: { name, namespace: 'default', labels }, spec: { size: 1 } })
  for (const name of ['in-a', 'in-b']) {
    await eventually(`${name} Ready`, async () => {
      const cr = await user.get({ ...MC, namespace: 'default', name })
      return ((cr.status ?? {}) as { conditions?: { type: string; status: string }[] }).conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ? true : undefined
    }, 30_000)
  }
  for (const op of ops) {
    const metrics = await get(op.endpoints.metricsAddress!, '/metrics')
    t.match(metrics.body, new RegExp(`^leader_election_master_status\\{name="${op === ops[0] ? 'memcached-operator-leader' : 'memcached-operator-leader-shard-b'}"\\} 1$`, 'm'))
    t.equal((await get(op.endpoints.healthProbeAddress!, '/readyz')).status, 200)
  }

  const records = sandbox.requests.log().filter((r) => r.userAgent === UA && r.resource !== '')
  t.same(records.filter((r) => r.code === 401 || r.code === 403).map((r) => `${r.code} ${r.verb} ${r.resource} ${r.name ?? ''}`), [], 'the authorizer refused nothing')
  const requests: Attributes[] = records.map((r) => ({ verb: r.verb, group: r.group, resource: r.resource, ...(r.subresource ? { subresource: r.subresource } : {}), ...(r.namespace ? { namespace: r.namespace } : {}), ...(r.name ? { name: r.name } : {}) }))
  const grants = grantsFor(kustomize('sharded'), NS, SA)
  t.same(requests.filter((a) => allowing(grants, a).length === 0), [], 'every request is allowed by kustomize/sharded')
  for (const role of ['Role/memcached-operator-system/memcached-operator-leader-election-role', 'Role/memcached-operator-system/memcached-operator-leader-election-role-shard-b']) {
    const rest = grants.filter((g) => g.from !== role)
    t.ok(requests.some((a) => allowing(rest, a).length === 0), `needed: ${role}`)
  }
})

t.test('a shard refused its Lease (kustomize/default\'s RBAC) says so: an error line, leader_election_master_status 0, /readyz failing; it never reconciles', async (t) => {
  const { sandbox, asOperator } = await sandboxWith(t, 'default')
  const user = clientFor(sandbox, 'test-user/1', 'test-user')
  t.teardown(() => user.close())
  const lines: string[] = []
  const op = await start(t, { ...shardOptions('sharded', 'memcached-operator-controller-manager-shard-b', asOperator), leaderElectRetryPeriod: '100ms', leaderElectRenewDeadline: '1s', leaderElectLeaseDuration: '2s' }, lines)
  const error = await eventually('the error line', () => lines.map((l) => JSON.parse(l) as { level: number; msg: string; lease?: string }).find((l) => l.level === 50 && /cannot take the leader Lease/.test(l.msg)))
  t.equal(error.lease, `${NS}/memcached-operator-leader-shard-b`)
  t.match(error.msg, /forbidden/)
  t.match(error.msg, /docs\/install\.md/)
  const refusals = () => sandbox.requests.log().filter((r) => r.userAgent === UA && r.resource === 'leases' && r.code === 403).length
  await eventually('three refusals', () => (refusals() >= 3 ? true : undefined))
  t.equal(lines.filter((l) => /cannot take the leader Lease/.test(l)).length, 1, 'said once, not at every retry')
  const metrics = await get(op.endpoints.metricsAddress!, '/metrics')
  t.match(metrics.body, /^leader_election_master_status\{name="memcached-operator-leader-shard-b"\} 0$/m)
  const ready = await get(op.endpoints.healthProbeAddress!, '/readyz')
  t.equal(ready.status, 500)
  t.match(ready.body, /\[-\]leaderElection failed/)
  t.match(ready.body, /\[\+\]informers ok/)
  t.equal((await get(op.endpoints.healthProbeAddress!, '/healthz')).status, 200, 'alive: a restart would not help')
  t.notOk(op.elector?.isLeader())
})

t.test('kustomize/sharded: neither Deployment\'s selector matches the other\'s pods, and each shard has a metrics Service the ServiceMonitor selects', async (t) => {
  const objects = kustomize('sharded')
  type Dep = KubeObject & { spec: { selector: { matchLabels: Record<string, string> }; template: { metadata: { labels: Record<string, string> } } } }
  type Svc = KubeObject & { spec: { selector: Record<string, string> } }
  const matches = (selector: Record<string, string>, labels: Record<string, string>) => Object.entries(selector).every(([k, v]) => labels[k] === v)
  const deployments = objects.filter((o): o is Dep => o.kind === 'Deployment')
  t.same(deployments.map((d) => d.metadata.name).sort(), ['memcached-operator-controller-manager', 'memcached-operator-controller-manager-shard-b'])
  for (const d of deployments) {
    for (const other of deployments) t.equal(matches(d.spec.selector.matchLabels, other.spec.template.metadata.labels), d === other, `${d.metadata.name}'s selector ${d === other ? 'matches its own pods' : `does not match ${other.metadata.name}'s`}`)
  }
  const services = objects.filter((o): o is Svc => o.kind === 'Service')
  t.equal(services.length, 2)
  const monitor = kustomize('prometheus').find((o) => o.kind === 'ServiceMonitor') as KubeObject & { spec: { selector: { matchLabels: Record<string, string> } } }
  for (const s of services) {
    t.equal(deployments.filter((d) => matches(s.spec.selector, d.spec.template.metadata.labels)).length, 1, `${s.metadata.name} selects one shard's pods`)
    t.ok(matches(monitor.spec.selector.matchLabels, s.metadata.labels ?? {}), `the ServiceMonitor selects ${s.metadata.name}`)
  }
})
