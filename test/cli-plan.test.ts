/**
 * `plan`: each class held by a chart change that causes it, against a live sandbox (the operator
 * running the bundled chart, real kubectl for the user's side), by directory and by ChartRevision;
 * offline from `kubectl get mc -A -o yaml`; and a CR that moved after the plan is held.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import pino from 'pino'
import t from 'tap'
import { chartRevisionCRD } from '../operator/api/chart-revision-crd.ts'
import { memcachedCRD } from '../operator/api/crd.ts'
import type { KubeObject } from '../operator/controller/client.ts'
import { runCli } from '../operator/cli/program.ts'
import { startOperator } from '../operator/cli/run.ts'
import type { Plan } from '../operator/cli/plan-make.ts'
import { observedOf, stillAsPlanned } from '../operator/fleet/plan.ts'
import { loadChart, readChartFiles } from '../operator/render/chart.ts'
import { revisionName } from '../operator/api/chart-revision.ts'
import { startSandbox } from '../operator/sandbox/index.ts'
import { chartWith } from './support/chart.ts'
import { captureIO } from './support/io.ts'
import { kubectlFor } from './support/kubectl.ts'
import { eventually } from './support/operator.ts'
import { tempDir } from './support/tmp.ts'

const own = loadChart()
const values = readChartFiles(own.dir).get('values.yaml')!
/** The bundled chart with one text of values.yaml replaced. */
const chartWithValues = (from: string, to: string): string => {
  if (!values.includes(from)) throw new Error(`values.yaml has no ${from}`)
  return chartWith({ 'values.yaml': values.replace(from, to) })
}

const sandbox = await startSandbox({ podReadyDelayMs: 10, installCRDs: [memcachedCRD(own) as unknown as KubeObject, chartRevisionCRD() as unknown as KubeObject] })
t.teardown(() => sandbox.close())
const kubectl = kubectlFor(sandbox.kubeconfigPath)
const operator = await startOperator(
  { kubeconfig: sandbox.kubeconfigPath, namespace: [], concurrency: '2', resyncPeriod: '10m', leaderElectionId: 'x', metricsBindAddress: '0', healthProbeBindAddress: '0' },
  captureIO(),
  pino({ level: 'silent' }),
)
t.teardown(() => operator.stop())
// small: one pod, no PodDisruptionBudget; big: two pods and a PodDisruptionBudget.
await kubectl(['apply', '-f', '-'], [{ name: 'small', size: 1 }, { name: 'big', size: 2 }].map((c) => JSON.stringify({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name: c.name, namespace: 'default' }, spec: { size: c.size } })).join('\n'))
await eventually('converged', async () => {
  const list = JSON.parse(await kubectl(['get', 'mc', '-A', '-o', 'json'])) as { items: { metadata: { generation: number }; status?: { observedGeneration?: number; chartRevision?: string } }[] }
  return list.items.length === 2 && list.items.every((i) => i.status?.observedGeneration === i.metadata.generation && i.status.chartRevision === revisionName(own)) ? true : undefined
})

const plan = async (args: string[]) => {
  const io = captureIO()
  const code = await runCli(['plan', '--kubeconfig', sandbox.kubeconfigPath, ...args], io)
  return { code, out: io.out(), err: io.err() }
}
const classes = async (args: string[]): Promise<{ code: number; classes: Record<string, string>; plan: Plan }> => {
  const r = await plan([...args, '-o', 'json'])
  const p = JSON.parse(r.out) as Plan
  return { code: r.code, classes: Object.fromEntries(p.memcacheds.map((m) => [m.memcached, m.class])), plan: p }
}

t.test('no-op: the chart the fleet runs changes nothing; exit 0', async (t) => {
  const r = await classes(['--chart', own.dir])
  t.equal(r.code, 0)
  t.same(r.classes, { 'default/big': 'none', 'default/small': 'none' })
  t.same(r.plan.target, { revision: revisionName(own), digest: `sha256:${own.digest}`, source: own.dir })
  t.match(r.plan.totals, { none: 2, update: 0, restart: 0, prune: 0, recreate: 0, conflict: 0, invalid: 0, error: 0 })
  t.equal(r.plan.memcacheds[0]!.from, revisionName(own), 'the revision each CR runs now')
})

t.test('in-place update: a PodDisruptionBudget changes, no pod is replaced', async (t) => {
  const r = await classes(['--chart', chartWithValues('maxUnavailable: 1', 'maxUnavailable: 2')])
  t.equal(r.code, 0, 'an update is not in the default --fail-on')
  t.same(r.classes, { 'default/big': 'update', 'default/small': 'none' })
})

t.test('pod restart: the pod template changes; the text output names the objects and the totals', async (t) => {
  const dir = chartWithValues('podAnnotations: {}', 'podAnnotations: {rollout: "2"}')
  const r = await classes(['--chart', dir])
  t.same(r.classes, { 'default/big': 'restart', 'default/small': 'restart' })
  const text = await plan(['--chart', dir])
  t.equal(text.code, 0)
  t.match(text.out, /^Plan: 2 Memcacheds to memcached-[0-9a-f]{12} \(/)
  t.match(text.out, /^  default\/big\s+restart\s+Deployment big: update \(pods restart\)$/m)
  t.match(text.out, /^Totals: none 0, update 0, restart 2, prune 0, recreate 0, conflict 0, invalid 0, error 0$/m)
})

t.test('a larger memoryMB alone is an update: the operator resizes the pods in place (the sandbox serves pods/resize); a smaller one restarts them', async (t) => {
  const grow = await classes(['--chart', chartWithValues('memoryMB: 64', 'memoryMB: 128')])
  t.equal(grow.code, 0)
  t.same(grow.classes, { 'default/big': 'update', 'default/small': 'update' })
  const big = grow.plan.memcacheds.find((m) => m.memcached === 'default/big')!.objects.find((o) => o.kind === 'Deployment')!
  t.match(big, { action: 'update', podsRestart: false, reason: /^memoryMB 64 -> 128: the pods are resized in place/ })
  t.match(grow.plan.totals, { update: 2, restart: 0 })
  const shrink = await classes(['--chart', chartWithValues('memoryMB: 64', 'memoryMB: 32')])
  t.same(shrink.classes, { 'default/big': 'restart', 'default/small': 'restart' })
  t.match(shrink.plan.memcacheds[0]!.objects.find((o) => o.kind === 'Deployment'), { action: 'update', podsRestart: true, reason: /refuses to lower a running container's memory limit/ })
})

t.test('prune: a template no longer rendered; exit 1 unless --fail-on leaves prune out', async (t) => {
  const dir = chartWithValues('podDisruptionBudget:\n  # Rendered only when size > 1.\n  enabled: true', 'podDisruptionBudget:\n  enabled: false')
  const r = await classes(['--chart', dir])
  t.equal(r.code, 1)
  t.same(r.classes, { 'default/big': 'prune', 'default/small': 'none' })
  t.equal((await plan(['--chart', dir, '--fail-on', 'invalid,conflict'])).code, 0)
})

t.test('recreate: an immutable field (a Service\'s clusterIP) changes', async (t) => {
  const r = await classes(['--chart', chartWithValues('  headless: true', '  headless: false')])
  t.equal(r.code, 1)
  t.same(r.classes, { 'default/big': 'recreate', 'default/small': 'recreate' })
  t.match(r.plan.memcacheds[0]!.objects.find((o) => o.kind === 'Service')!.reason, /spec\.clusterIP/)
})

t.test('ownership conflict: a new object whose name somebody else\'s object has', async (t) => {
  await kubectl(['create', 'serviceaccount', 'small', '-n', 'default'])
  t.teardown(() => kubectl(['delete', 'serviceaccount', 'small', '-n', 'default']))
  const r = await classes(['--chart', chartWithValues('serviceAccount:\n  # Render a ServiceAccount for the pods.\n  create: false', 'serviceAccount:\n  create: true')])
  t.equal(r.code, 1)
  // big's ServiceAccount is created, and its pods are to run as it (the pod template changes).
  t.same(r.classes, { 'default/big': 'restart', 'default/small': 'conflict' }, 'small\'s ServiceAccount is somebody else\'s')
  t.match(r.plan.memcacheds.find((m) => m.memcached === 'default/small')!.objects.find((o) => o.kind === 'ServiceAccount')!.reason, 'ServiceAccount default/small exists and has no controller; it was not created by this Memcached and is left alone')
})

t.test('invalid: the revision refuses the values (a default of the wrong type)', async (t) => {
  const r = await classes(['--chart', chartWithValues('podAnnotations: {}', 'podAnnotations: {x: 1}')])
  t.equal(r.code, 1)
  t.same(r.classes, { 'default/big': 'invalid', 'default/small': 'invalid' })
  t.match(r.plan.memcacheds[0]!.error, /podAnnotations\.x: must be string/)
})

t.test('--revision plans a ChartRevision of the cluster; an unknown one is an error', async (t) => {
  const dir = chartWithValues('podAnnotations: {}', 'podAnnotations: {rollout: "3"}')
  const pushed = captureIO()
  t.equal(await runCli(['chart', 'push', dir, '--kubeconfig', sandbox.kubeconfigPath], pushed), 0, pushed.err())
  const name = /chartrevision\.cache\.example\.com\/(\S+) created/.exec(pushed.out())![1]!
  const r = await classes(['--revision', name])
  t.same(r.classes, { 'default/big': 'restart', 'default/small': 'restart' })
  t.equal(r.plan.target.source, `ChartRevision ${name}`)
  const missing = await plan(['--revision', 'memcached-000000000000'])
  t.equal(missing.code, 2)
  t.match(missing.err, 'ChartRevision "memcached-000000000000" does not exist')
})

t.test('offline: the fleet from kubectl get mc -A -o yaml, converged in a sandbox, plans as the cluster does', async (t) => {
  const file = join(tempDir('mc-plan-'), 'fleet.yaml')
  writeFileSync(file, await kubectl(['get', 'mc', '-A', '-o', 'yaml']))
  for (const dir of [own.dir, chartWithValues('maxUnavailable: 1', 'maxUnavailable: 2'), chartWithValues('  headless: true', '  headless: false')]) {
    const live = await classes(['--chart', dir])
    const io = captureIO()
    const code = await runCli(['plan', '--offline', file, '--chart', dir, '-o', 'json'], io)
    t.equal(code, live.code, io.err())
    t.match(io.err(), /^offline: 2 Memcacheds converged on memcached-[0-9a-f]{12} in a sandbox/m)
    t.same(Object.fromEntries((JSON.parse(io.out()) as Plan).memcacheds.map((m) => [m.memcached, m.class])), live.classes, `offline = live for ${dir}`)
  }
})

t.test('a CR whose live state moved after the plan is held; a status change is not a move', async (t) => {
  const dir = chartWithValues('podAnnotations: {}', 'podAnnotations: {rollout: "4"}')
  const before = (await classes(['--chart', dir])).plan
  const planned = (name: string) => before.memcacheds.find((m) => m.memcached === `default/${name}`)!
  const now = async (name: string) => observedOf((await classes(['--chart', dir])).plan.memcacheds.find((m) => m.memcached === `default/${name}`)!)
  t.same(stillAsPlanned(planned('big'), await now('big')), [], 'nothing moved')
  await kubectl(['patch', 'deployment', 'big', '--subresource=status', '--type=merge', '-p', '{"status":{"observedGeneration":99}}'])
  t.same(stillAsPlanned(planned('big'), await now('big')), [], 'a status written since is not a move')
  // Somebody else's change to an object of big: held.
  await kubectl(['annotate', 'service', 'big', 'example.com/touched=yes'])
  t.same(stillAsPlanned(planned('big'), await now('big')), ['Service/default/big: changed since the plan'])
  // small's spec changes: held, and its render differs.
  await kubectl(['patch', 'mc', 'small', '--type', 'merge', '-p', '{"spec":{"memoryMB":128}}'])
  const why = stillAsPlanned(planned('small'), await now('small'))
  t.match(why[0], /^the Memcached changed \(generation 1 → 2\)$/)
  t.ok(why.includes('Deployment/default/small: renders differently than planned'))
})

t.test('usage errors: no target, two targets, a class that does not exist', async (t) => {
  t.equal((await plan([])).code, 2)
  const both = await plan(['--chart', own.dir, '--revision', 'x'])
  t.equal(both.code, 2)
  t.match(both.err, 'give the target: --chart DIR or --revision NAME (one of them)')
  const bad = await plan(['--chart', own.dir, '--fail-on', 'invalid,explode'])
  t.equal(bad.code, 2)
  t.match(bad.err, '--fail-on: unknown class "explode"')
})

t.test('prune of a kind the target no longer declares: the operator prunes over the kinds it watches', async (t) => {
  await kubectl(['patch', 'mc', 'small', '--type', 'merge', '-p', '{"spec":{"networkPolicy":{"enabled":true}}}'])
  await eventually('the NetworkPolicy applied', async () => ((await kubectl(['get', 'networkpolicies', '-n', 'default', '-o', 'name'])).includes('networkpolicy.networking.k8s.io/small') ? true : undefined))
  await eventually('small reconciled', async () => {
    const cr = JSON.parse(await kubectl(['get', 'mc', 'small', '-o', 'json'])) as { metadata: { generation: number }; status?: { observedGeneration?: number } }
    return cr.status?.observedGeneration === cr.metadata.generation ? true : undefined
  })
  const kinds = readChartFiles(own.dir).get('kinds.yaml')!
  const without = '  - apiVersion: networking.k8s.io/v1\n    kind: NetworkPolicy\n    resource: networkpolicies\n    patchable:\n      - metadata.annotations\n      - metadata.labels\n'
  t.ok(kinds.includes(without))
  const dir = chartWith({ 'kinds.yaml': kinds.replace(without, ''), 'templates/networkpolicy.ejs': null })
  const r = await classes(['--chart', dir])
  t.same(r.classes, { 'default/big': 'none', 'default/small': 'prune' })
  t.same(r.plan.memcacheds.find((m) => m.memcached === 'default/small')!.objects.filter((o) => o.action === 'prune').map((o) => `${o.kind}/${o.name}`), ['NetworkPolicy/small'])
})

t.test('offline usage: a ChartRevision target, offline flags without --offline, a file that cannot be read', async (t) => {
  const revision = await plan(['--offline', '/nonexistent.yaml', '--revision', 'x'])
  t.equal(revision.code, 2)
  t.match(revision.err, '--offline plans a chart directory: give --chart DIR, not --revision')
  const current = await plan(['--chart', own.dir, '--current-chart', own.dir])
  t.equal(current.code, 2)
  t.match(current.err, '--current-chart and --timeout go with --offline')
  const missing = await plan(['--offline', '/nonexistent.yaml', '--chart', own.dir])
  t.equal(missing.code, 2)
  t.match(missing.err, 'error: --offline /nonexistent.yaml: cannot read: ENOENT')
})
