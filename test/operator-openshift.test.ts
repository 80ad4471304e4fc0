/**
 * OpenShift: a default Memcached works without the user setting anything. The operator finds the
 * platform by discovery (security.openshift.io serves SecurityContextConstraints) and renders the
 * chart's platforms/openshift.yaml, which leaves the UID and GID to the restricted-v2 SCC —
 * against the sandbox's restricted-v2 admission (option `openshift`), which refuses the image's
 * UID 11211 as OpenShift does.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { runCli } from '../operator/cli/program.ts'
import { ApiError, type KubeClient, type KubeObject } from '../operator/controller/client.ts'
import { detectPlatform } from '../operator/controller/platform.ts'
import { loadChart } from '../operator/render/chart.ts'
import { renderInstance } from '../operator/render/engine.ts'
import { memcachedCRD } from '../operator/api/crd.ts'
import { startSandbox, type Sandbox } from '../operator/sandbox/index.ts'
import { captureIO } from './support/io.ts'
import { clientFor, eventually, startOperatorOn } from './support/operator.ts'
import { tempDir } from './support/tmp.ts'

const NS = 'shift'
const RANGE = { 'openshift.io/sa.scc.uid-range': '1000680000/10000', 'openshift.io/sa.scc.supplemental-groups': '1000680000/10000' }
type Condition = { type: string; status: string; reason: string; message: string }
type PodSpec = { securityContext?: Record<string, unknown>; containers: { name: string; securityContext?: Record<string, unknown> }[] }

async function openshiftSandbox(t: Test): Promise<{ sandbox: Sandbox; client: KubeClient }> {
  const sandbox = await startSandbox({ openshift: true, podReadyDelayMs: 20, installCRDs: [memcachedCRD(loadChart()) as unknown as KubeObject] })
  t.teardown(() => sandbox.close())
  const client = clientFor(sandbox, 'test-user/1', 'test-user')
  t.teardown(() => client.close())
  await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS, annotations: RANGE } })
  return { sandbox, client }
}

const pod = (name: string, podSc: Record<string, unknown>) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: NS }, spec: { securityContext: podSc, containers: [{ name: 'c', image: 'memcached:1.6.38-alpine' }] } })

t.test('restricted-v2 admission: a UID outside the namespace’s range is refused, none gets the range’s first', async (t) => {
  const { client } = await openshiftSandbox(t)
  const err = await client.create(pod('fixed', { runAsNonRoot: true, runAsUser: 11211 })).catch((e: unknown) => e)
  t.ok(err instanceof ApiError)
  t.match(err, {
    status: 403,
    reason: 'Forbidden',
    message: 'pods "fixed" is forbidden: unable to validate against any security context constraint: [provider "restricted-v2": spec.containers[0].securityContext.runAsUser: Invalid value: 11211: must be in the ranges: [1000680000, 1000689999]]',
  })
  const fsGroup = await client.create(pod('group', { fsGroup: 11211 })).catch((e: unknown) => e)
  t.match(fsGroup, { status: 403, message: /\.spec\.securityContext\.fsGroup: Invalid value: \[\]int64\{11211\}: 11211 is not an allowed group/ })
  const created = await client.create(pod('free', { runAsNonRoot: true }))
  const spec = created.spec as PodSpec
  t.equal(spec.containers[0]!.securityContext?.runAsUser, 1000680000, 'the first UID of the range is assigned')
  t.equal(spec.securityContext?.fsGroup, 1000680000)
  t.equal(created.metadata.annotations?.['openshift.io/scc'], 'restricted-v2')
  const inRange = await client.create(pod('chosen', { runAsUser: 1000680005 }))
  t.equal((inRange.spec as PodSpec).containers[0]!.securityContext?.runAsUser, undefined, 'a UID in the range is kept as the pod sets it')
  await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'bare' } })
  const bare = await client.create({ ...pod('x', {}), metadata: { name: 'x', namespace: 'bare' } }).catch((e: unknown) => e)
  t.match(bare, { status: 403, message: /unable to find annotation openshift\.io\/sa\.scc\.uid-range/ })
})

t.test('the render for kubernetes is refused by restricted-v2 (ReplicaFailure); the render for openshift runs', async (t) => {
  const { client } = await openshiftSandbox(t)
  const chart = loadChart()
  const deployment = (platform: string | undefined, name: string) => {
    const objects = renderInstance(chart, { name, namespace: NS, spec: { size: 1 }, ...(platform ? { platform } : {}) }).objects
    return objects.find((o) => o.kind === 'Deployment')!
  }
  const old = deployment(undefined, 'old')
  t.match((old.spec as { template: { spec: PodSpec } }).template.spec.securityContext, { runAsUser: 11211, runAsGroup: 11211 })
  await client.create(old as unknown as KubeObject)
  const failure = await eventually('the old render’s ReplicaFailure', async () => {
    const d = await client.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: NS, name: 'old' })
    return ((d.status as { conditions?: Condition[] } | undefined)?.conditions ?? []).find((c) => c.type === 'ReplicaFailure' && c.status === 'True')
  })
  t.match(failure.message, /unable to validate against any security context constraint: .*runAsUser: Invalid value: 11211: must be in the ranges: \[1000680000, 1000689999\]/)

  const next = deployment('openshift', 'new')
  const podSc = (next.spec as { template: { spec: PodSpec } }).template.spec.securityContext
  t.same(podSc, { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } }, 'no UID or GID: the platform assigns them')
  await client.create(next as unknown as KubeObject)
  await eventually('the new render’s pod ready', async () => {
    const d = await client.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: NS, name: 'new' })
    return (d.status as { readyReplicas?: number } | undefined)?.readyReplicas === 1 ? d : undefined
  })
})

t.test('extstore on a claim: the render for openshift sets no fsGroup, restricted-v2 assigns one from the range, and the pod runs', async (t) => {
  const { client } = await openshiftSandbox(t)
  const objects = renderInstance(loadChart(), { name: 'flash', namespace: NS, spec: { size: 1, extstore: { enabled: true, volume: { type: 'ephemeral' } } }, platform: 'openshift' }).objects
  const deployment = objects.find((o) => o.kind === 'Deployment')!
  t.notOk('fsGroup' in ((deployment.spec as { template: { spec: PodSpec } }).template.spec.securityContext ?? {}), 'no group of its own: the platform assigns it')
  await client.create(deployment as unknown as KubeObject)
  await eventually('the pod ready', async () => {
    const d = await client.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: NS, name: 'flash' })
    return (d.status as { readyReplicas?: number } | undefined)?.readyReplicas === 1 ? d : undefined
  })
  const [p] = (await client.list({ apiVersion: 'v1', kind: 'Pod' }, { namespace: NS, labelSelector: 'app.kubernetes.io/instance=flash' })).items
  t.equal((p!.spec as PodSpec).securityContext?.fsGroup, 1000680000, 'the claim goes to the group restricted-v2 gave the pod')
})

t.test('the operator finds OpenShift by discovery and a default Memcached becomes Ready with a UID from the namespace’s range', async (t) => {
  const { sandbox, client } = await openshiftSandbox(t)
  t.equal(await detectPlatform(client), 'openshift')
  const op = await startOperatorOn(sandbox)
  t.teardown(() => op.stop())
  await client.create({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name: 'cache', namespace: NS }, spec: { size: 2 } })
  const cr = await eventually('the default CR Ready', async () => {
    const o = await client.get({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', namespace: NS, name: 'cache' })
    const conditions = (o.status as { conditions?: Condition[] } | undefined)?.conditions ?? []
    return conditions.some((c) => c.type === 'Ready' && c.status === 'True') ? o : undefined
  }, 30_000)
  t.match(cr.status, { readyReplicas: 2 })
  const pods = (await client.list({ apiVersion: 'v1', kind: 'Pod' }, { namespace: NS, labelSelector: 'app.kubernetes.io/instance=cache' })).items
  t.equal(pods.length, 2)
  for (const p of pods) {
    t.equal((p.spec as PodSpec).containers.find((c) => c.name === 'memcached')?.securityContext?.runAsUser, 1000680000)
    t.equal(p.metadata.annotations?.['openshift.io/scc'], 'restricted-v2')
  }
  // diff asks discovery as the operator does: what the operator applied is what it would apply.
  const file = join(tempDir('mc-shift-'), 'cache.yaml')
  writeFileSync(file, `apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: cache, namespace: ${NS}}\nspec: {size: 2}\n`)
  const same = captureIO()
  t.equal(await runCli(['diff', '-f', file, '--kubeconfig', sandbox.kubeconfigPath], same), 0, `no difference: ${same.out()}${same.err()}`)
  const forced = captureIO()
  t.equal(await runCli(['diff', '-f', file, '--kubeconfig', sandbox.kubeconfigPath, '--platform', 'kubernetes'], forced), 1, 'rendered for kubernetes, the UID differs')
  t.match(forced.out(), /\+\s+runAsUser: 11211/)
})

t.test('on a cluster without security.openshift.io the platform is kubernetes', async (t) => {
  const sandbox = await startSandbox({})
  t.teardown(() => sandbox.close())
  const client = clientFor(sandbox)
  t.teardown(() => client.close())
  t.equal(await detectPlatform(client), 'kubernetes')
})
