/**
 * The cluster-wide install (kustomize/default) reads no Secret until a namespace grants it: its
 * ClusterRole has no Secret rule, the input-secrets ClusterRole is installed unbound, and the
 * operator, as its ServiceAccount under the sandbox's authorizer, lists and watches Secrets only in
 * the namespaces of CRs that refer to one. A CR whose namespace has not bound the role is told so,
 * with the command that binds it; once bound (no restart), the CR converges.
 */
import { execFile } from 'node:child_process'
import pino from 'pino'
import t from 'tap'
import { memcachedCRD } from '../operator/api/crd.ts'
import type { KubeObject } from '../operator/controller/client.ts'
import { packageVersion } from '../operator/cli/io.ts'
import { startOperator } from '../operator/cli/run.ts'
import { loadChart } from '../operator/render/chart.ts'
import { startSandbox } from '../operator/sandbox/index.ts'
import { grantsFor, kustomize } from './deploy-manifests.ts'
import { captureIO } from './support/io.ts'
import { clientFor, eventually } from './support/operator.ts'
import { kubectlPath } from './support/tools.ts'

const NS = 'memcached-operator-system'
const SA = 'memcached-operator-controller-manager'
const UA = `memcached-operator/${packageVersion()}`
const MC = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached' } as const
const chart = loadChart()
type Condition = { type: string; status: string; reason: string; message: string }

const apply = (kubeconfig: string, objects: unknown[]) =>
  new Promise<void>((done, fail) => {
    const kubectl = execFile(kubectlPath(), ['--kubeconfig', kubeconfig, 'apply', '--server-side', '-f', '-'], (err) => (err ? fail(err) : done()))
    kubectl.stdin!.end(objects.map((o) => JSON.stringify(o)).join('\n'))
  })

t.test('kustomize/default: no Secret is read where no RoleBinding grants it; a RoleBinding to input-secrets lets the CR converge', async (t) => {
  const objects = kustomize('default')
  const grants = grantsFor(objects, NS, SA)
  t.notOk(grants.some((g) => (g.rule.resources ?? []).includes('secrets')), 'the operator is granted no Secret anywhere')
  t.ok(objects.some((o) => o.kind === 'ClusterRole' && o.metadata.name === 'memcached-operator-input-secrets'), 'the input-secrets ClusterRole is installed')

  const sandbox = await startSandbox({ podReadyDelayMs: 10, requestLogSize: 100_000, installCRDs: [memcachedCRD(chart) as unknown as KubeObject] })
  t.teardown(() => sandbox.close())
  const user = clientFor(sandbox, 'test-user/1', 'test-user')
  t.teardown(() => user.close())
  for (const ns of [NS, 'team-b', 'plain']) await user.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } })
  await apply(sandbox.kubeconfigPath, objects.filter((o) => o.kind === 'ServiceAccount' || o.apiVersion === 'rbac.authorization.k8s.io/v1'))
  const asOperator = await sandbox.kubeconfigFor({ user: `system:serviceaccount:${NS}:${SA}` })
  const op = await startOperator({ kubeconfig: asOperator, namespace: [], concurrency: '2', resyncPeriod: '10m', leaderElectionId: 'memcached-operator-leader', metricsBindAddress: '0', healthProbeBindAddress: '0' }, captureIO(), pino({ level: 'silent' }), () => chart)
  t.teardown(() => op.stop())

  await user.create({ ...MC, metadata: { name: 'cache', namespace: 'plain' }, spec: { size: 1 } })
  await user.create({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'keyed-auth', namespace: 'team-b', labels: { 'cache.example.com/memcached-input': 'true' } }, stringData: { passwords: 'user:password\n' } } as KubeObject)
  await user.create({ ...MC, metadata: { name: 'keyed', namespace: 'team-b' }, spec: { size: 1, auth: { enabled: true, secretName: 'keyed-auth' }, reload: { enabled: false } } })
  const condition = (ns: string, name: string, type: string) => user.get({ ...MC, namespace: ns, name }).then((cr) => ((cr.status ?? {}) as { conditions?: Condition[] }).conditions?.find((c) => c.type === type))
  const refused = await eventually('keyed Degraded SecretNotFound', async () => {
    const d = await condition('team-b', 'keyed', 'Degraded')
    return d?.status === 'True' && d.reason === 'SecretNotFound' ? d : undefined
  })
  t.match(refused.message, /Secret team-b\/keyed-auth cannot be read: the operator may not read Secrets in namespace team-b \(.*forbidden.*\); grant it there with a RoleBinding to the ClusterRole memcached-operator-input-secrets: kubectl create rolebinding memcached-operator-input-secrets -n team-b --clusterrole=memcached-operator-input-secrets/)
  await eventually('cache Ready', async () => ((await condition('plain', 'cache', 'Ready'))?.status === 'True' ? true : undefined))

  // The namespace's owner binds the role, as docs/install.md says; the refused informer's retry picks it up.
  await apply(sandbox.kubeconfigPath, [{ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'memcached-operator-input-secrets', namespace: 'team-b' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'memcached-operator-input-secrets' }, subjects: [{ kind: 'ServiceAccount', name: SA, namespace: NS }] }])
  await eventually('keyed Ready', async () => ((await condition('team-b', 'keyed', 'Ready'))?.status === 'True' ? true : undefined), 60_000)
  const pods = await user.list({ apiVersion: 'v1', kind: 'Pod' }, { namespace: 'team-b' })
  t.ok(pods.items.every((p) => p.metadata.annotations?.['checksum/auth-secret']), 'the pods carry the Secret\'s checksum (reload off: a change of it rolls them)')

  const secretRequests = sandbox.requests.log().filter((r) => r.userAgent === UA && r.resource === 'secrets')
  t.same([...new Set(secretRequests.map((r) => r.namespace ?? '(cluster-wide)'))], ['team-b'], 'Secrets were asked for in team-b only: never cluster-wide, never where no CR refers to one')
})
