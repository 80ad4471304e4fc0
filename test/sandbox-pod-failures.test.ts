/**
 * Pods that fail as a kubelet reports them (controllers/pod-failures.ts), and the Deployment
 * status that follows as kube-controller-manager's deployment controller writes it
 * (pkg/controller/deployment/progress.go: ProgressDeadlineExceeded) — what a health gate watches,
 * seen with real kubectl, and through the operator on a Memcached.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { podFailureRules, startSandboxCommand } from '../operator/cli/sandbox.ts'
import { captureIO } from './support/io.ts'
import { tempDir } from './support/tmp.ts'
import type { KubeObject } from '../operator/controller/client.ts'
import { memcachedCRD } from '../operator/api/crd.ts'
import { DEFAULT_CHART_DIR, loadChart } from '../operator/render/chart.ts'
import { chartWith } from './support/chart.ts'
import { parsePodFailures, crashBackOffMs, reportsAgain } from '../operator/sandbox/controllers/pod-failures.ts'
import { startSandbox } from '../operator/sandbox/index.ts'
import { kubectlFor } from './support/kubectl.ts'
import { clientFor, eventually, startOperatorOn } from './support/operator.ts'

type ContainerStatus = { name: string; ready: boolean; restartCount: number; state: Record<string, { reason?: string; message?: string }>; lastState: { terminated?: { exitCode: number; reason: string } } }
type PodStatus = { phase: string; podIP?: string; conditions: { type: string; status: string; reason?: string }[]; containerStatuses?: ContainerStatus[] }
type DeploymentStatus = { availableReplicas?: number; readyReplicas?: number; conditions?: { type: string; status: string; reason: string; message: string }[] }

const sandbox = await startSandbox({ podReadyDelayMs: 20, podFailures: [{ image: ':crash$', failure: 'CrashLoop' }], installCRDs: [memcachedCRD(loadChart()) as unknown as KubeObject] })
t.teardown(() => sandbox.close())
const client = clientFor(sandbox, 'test-user/1', 'test-user')
t.teardown(() => client.close())
const kubectl = kubectlFor(sandbox.kubeconfigPath)

function deployment(name: string, image: string, progressDeadlineSeconds = 600): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: 'default' },
    spec: { replicas: 1, progressDeadlineSeconds, selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'main', image }, { name: 'sidecar', image: 'busybox:1' }] } } },
  }
}
async function podOf(app: string, until: (s: PodStatus) => boolean): Promise<KubeObject & { status: PodStatus }> {
  return eventually(`${app}'s pod`, async () => {
    const pod = (await client.list({ apiVersion: 'v1', kind: 'Pod' }, { namespace: 'default', labelSelector: `app=${app}` })).items[0] as (KubeObject & { status: PodStatus }) | undefined
    return pod?.status && until(pod.status) ? pod : undefined
  })
}
const main = (s: PodStatus) => s.containerStatuses?.find((c) => c.name === 'main')

t.test('a crash loop: Running, not Ready, CrashLoopBackOff with a growing restartCount; the Deployment times out progressing', async (t) => {
  await client.create(deployment('crasher', 'memcached:crash', 1))
  const pod = await podOf('crasher', (s) => (main(s)?.restartCount ?? 0) >= 3)
  const c = main(pod.status)!
  t.equal(pod.status.phase, 'Running')
  t.match(c, { ready: false, state: { waiting: { reason: 'CrashLoopBackOff', message: /^back-off \d+s restarting failed container=main pod=crasher-/ } }, lastState: { terminated: { exitCode: 1, reason: 'Error' } } })
  t.match(pod.status.containerStatuses?.find((x) => x.name === 'sidecar'), { ready: true, state: { running: {} } }, 'the container whose image matches no rule runs')
  t.match(pod.status.conditions.find((x) => x.type === 'Ready'), { status: 'False', reason: 'ContainersNotReady' })
  const d = await eventually('ProgressDeadlineExceeded', async () => {
    const o = await client.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: 'crasher' })
    const s = o.status as DeploymentStatus
    return s.conditions?.some((x) => x.type === 'Progressing' && x.reason === 'ProgressDeadlineExceeded') ? s : undefined
  })
  t.equal(d.availableReplicas, undefined, 'no pod available (omitted at 0)')
  t.match(d.conditions?.find((x) => x.type === 'Progressing'), { status: 'False', message: /^ReplicaSet "crasher-[a-z0-9]+" has timed out progressing\.$/ })
  t.match(d.conditions?.find((x) => x.type === 'Available'), { status: 'False', reason: 'MinimumReplicasUnavailable' })
  const table = await kubectl(['get', 'pods', '-l', 'app=crasher'])
  t.match(table, /crasher-\S+\s+1\/2\s+CrashLoopBackOff\s+\d+/, `kubectl shows the crash loop:\n${table}`)
  const rollout = await kubectl(['rollout', 'status', 'deployment/crasher', '--timeout=5s']).catch((err: Error & { stderr?: string }) => err.stderr ?? err.message)
  t.match(rollout, /deployment "crasher" exceeded its progress deadline/, 'kubectl rollout status reads the deadline as it does on a real cluster')
})

t.test('an image that cannot be pulled: Pending, ErrImagePull then ImagePullBackOff — rules set while the sandbox runs', async (t) => {
  const before = sandbox.podFailures.get()
  sandbox.podFailures.set([...before, { image: '^registry\\.invalid/', failure: 'ImagePull' }, { image: ':unready$', failure: 'NeverReady' }])
  t.teardown(() => sandbox.podFailures.set(before))
  await client.create(deployment('puller', 'registry.invalid/memcached:1'))
  const first = await podOf('puller', (s) => main(s)?.state.waiting !== undefined && main(s)?.state.waiting?.reason !== 'ContainerCreating')
  t.equal(first.status.phase, 'Pending')
  t.match(main(first.status)?.state.waiting?.reason, /^(ErrImagePull|ImagePullBackOff)$/)
  const later = await podOf('puller', (s) => main(s)?.state.waiting?.reason === 'ImagePullBackOff')
  t.match(main(later.status), { restartCount: 0, state: { waiting: { message: 'Back-off pulling image "registry.invalid/memcached:1"' } } })
  t.match(await kubectl(['get', 'pods', '-l', 'app=puller']), /puller-\S+\s+1\/2\s+ImagePullBackOff\s+0\s/)

  await client.create(deployment('unready', 'memcached:unready'))
  const pod = await podOf('unready', (s) => s.phase === 'Running')
  t.match(main(pod.status), { ready: false, restartCount: 0, state: { running: {} } }, 'running, its readiness never comes')
  t.match(await kubectl(['get', 'pods', '-l', 'app=unready']), /unready-\S+\s+1\/2\s+Running\s+0\s/)
  const d = (await client.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: 'unready' })).status as DeploymentStatus
  t.equal(d.availableReplicas, undefined)
  t.match(d.conditions?.find((x) => x.type === 'Progressing'), { status: 'True' }, 'still within its deadline')
})

t.test('a Memcached whose image crash-loops never becomes Available through the operator', async (t) => {
  const op = await startOperatorOn(sandbox, { namespaces: ['default'] })
  t.teardown(() => op.stop())
  await client.create({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name: 'bad', namespace: 'default' }, spec: { size: 1, image: { tag: 'crash' } } })
  const cr = await eventually('ReplicasNotReady with a crash-looping pod', async () => {
    const o = await client.get({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', namespace: 'default', name: 'bad' })
    const pods = (await client.list({ apiVersion: 'v1', kind: 'Pod' }, { namespace: 'default', labelSelector: 'app.kubernetes.io/instance=bad' })).items
    const crashing = pods.some((p) => ((p.status as PodStatus | undefined)?.containerStatuses ?? []).some((c) => (c.restartCount ?? 0) >= 1))
    const available = ((o.status ?? {}) as DeploymentStatus).conditions?.find((c) => c.type === 'Available')
    if (crashing && available?.reason === 'ReplicasNotReady') return o
    throw new Error(JSON.stringify({ status: o.status, pods: pods.map((p) => p.status) }))
  })
  t.match(((cr.status ?? {}) as DeploymentStatus).conditions?.find((c) => c.type === 'Ready'), { status: 'False' })
})

t.test('end to end: a Memcached whose rollout to a crash-looping image passes its progress deadline is Degraded ProgressDeadlineExceeded', async (t) => {
  // The bundled chart leaves the deadline at the API server's default (600 s); this one sets 1 s.
  const template = readFileSync(join(DEFAULT_CHART_DIR, 'templates', 'deployment.ejs'), 'utf8').replace('  replicas: <%= values.size %>\n', '  replicas: <%= values.size %>\n  progressDeadlineSeconds: 1\n')
  const op = await startOperatorOn(sandbox, { namespaces: ['default'], chart: loadChart(chartWith({ 'templates/deployment.ejs': template })) })
  t.teardown(() => op.stop())
  await client.create({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name: 'gated', namespace: 'default' }, spec: { size: 1 } })
  await eventually('gated ready', async () => {
    const o = await client.get({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', namespace: 'default', name: 'gated' })
    return ((o.status ?? {}) as DeploymentStatus).conditions?.find((c) => c.type === 'Ready')?.status === 'True' ? true : undefined
  })
  await kubectl(['patch', 'mc', 'gated', '--type', 'merge', '-p', '{"spec":{"image":{"tag":"crash"}}}'])
  const cr = await eventually('Degraded ProgressDeadlineExceeded', async () => {
    const o = await client.get({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', namespace: 'default', name: 'gated' })
    return ((o.status ?? {}) as DeploymentStatus).conditions?.find((c) => c.type === 'Degraded')?.reason === 'ProgressDeadlineExceeded' ? o : undefined
  })
  const conditions = ((cr.status ?? {}) as DeploymentStatus).conditions ?? []
  t.match(conditions.find((c) => c.type === 'Degraded'), { status: 'True', message: /^ReplicaSet "gated-[a-z0-9]+" has timed out progressing\.$/ })
  t.match(conditions.find((c) => c.type === 'Progressing'), { status: 'False', reason: 'ProgressDeadlineExceeded' })
  t.match(conditions.find((c) => c.type === 'Available'), { status: 'True' }, 'the old pod still serves: a rolling update keeps it until the new one is available')
  t.match(await kubectl(['get', 'mc', 'gated']), /gated\s+1\s+1\s+1\s+ProgressDeadlineExceeded\s/, 'kubectl get mc shows why')
})

t.test('rules are checked: a bad pattern or mode names the rule and the field; the back-off doubles up to its cap', async (t) => {
  t.throws(() => parsePodFailures([{ image: '(', failure: 'CrashLoop' }]), /^pod failures\[0\]\.image: Invalid regular expression/)
  t.throws(() => parsePodFailures([{ image: 'x', failure: 'Sometimes' }]), /pod failures\[0\]\.failure: must be one of ImagePull, CrashLoop, NeverReady, not "Sometimes"/)
  t.throws(() => parsePodFailures({}), /must be a list/)
  t.same([1, 2, 3, 20].map((n) => crashBackOffMs(n, 10_000)), [10_000, 20_000, 40_000, 300_000], 'the kubelet\'s 10 s doubling to 5 min')
  const modes = (...m: ('ImagePull' | 'CrashLoop' | 'NeverReady')[]) => new Map(m.map((x, i) => [`c${i}`, x]))
  t.same([reportsAgain(modes('CrashLoop'), 9), reportsAgain(modes('ImagePull'), 1), reportsAgain(modes('ImagePull'), 2), reportsAgain(modes('NeverReady'), 1)], [true, true, false, false], 'a crash loop is reported again for ever, a pull until it backs off, a never-ready pod once')
})

t.test('sandbox --pod-failure FAILURE=PATTERN sets the rules; a malformed one is a usage error naming the flag', async (t) => {
  t.same(podFailureRules(['CrashLoop=:crash$', 'ImagePull=^registry\\.invalid/']), [{ image: ':crash$', failure: 'CrashLoop' }, { image: '^registry\\.invalid/', failure: 'ImagePull' }])
  t.throws(() => podFailureRules(['crash']), { name: 'UsageError', message: '--pod-failure: "crash": must be FAILURE=PATTERN, e.g. CrashLoop=:crash$' })
  t.throws(() => podFailureRules(['Flaky=x']), { name: 'UsageError', message: /^--pod-failure: pod failures\[0\]\.failure: must be one of ImagePull, CrashLoop, NeverReady/ })
  const io = captureIO()
  const running = await startSandboxCommand({ podFailure: ['NeverReady=:unready$'], operator: false, sample: false, kubeconfigOut: join(tempDir('mc-pf-'), 'kubeconfig') }, io)
  t.teardown(() => running.close())
  t.same(running.sandbox.podFailures.get(), [{ image: ':unready$', failure: 'NeverReady' }])
})

t.test('PUT and GET /sandbox/v1/pod-failures with kubectl --raw; a bad rule is a 400 naming it', async (t) => {
  const before = sandbox.podFailures.get()
  t.teardown(() => sandbox.podFailures.set(before))
  const rules = [{ image: ':gone$', failure: 'ImagePull' }]
  t.same(JSON.parse(await kubectl(['replace', '--raw', '/sandbox/v1/pod-failures', '-f', '-'], JSON.stringify(rules))), rules)
  t.same(JSON.parse(await kubectl(['get', '--raw', '/sandbox/v1/pod-failures'])), rules)
  t.same(sandbox.podFailures.get(), rules, 'the kubelet\'s rules')
  const err = await kubectl(['replace', '--raw', '/sandbox/v1/pod-failures', '-f', '-'], '[{"image":"x","failure":"Sometimes"}]').catch((e: Error & { stderr?: string }) => e.stderr ?? e.message)
  t.match(err, /pod failures\[0\]\.failure: must be one of ImagePull, CrashLoop, NeverReady/)
  t.same(sandbox.podFailures.get(), rules, 'a refused PUT changes nothing')
  const res = await fetch(`${sandbox.url}/sandbox/v1/pod-failures`, { method: 'DELETE', headers: { Authorization: 'Bearer sandbox' } })
  t.equal(res.status, 405)
})
