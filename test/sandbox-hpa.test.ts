/**
 * autoscaling/v2 HorizontalPodAutoscaler served by the sandbox: storage, discovery, the upstream
 * defaults (pkg/apis/autoscaling/v2/defaults.go), validation (pkg/apis/autoscaling/validation/
 * validation.go), the `kubectl get hpa` table (pkg/printers/internalversion/printers.go
 * printHorizontalPodAutoscaler) and `kubectl autoscale`, whose typed client sends protobuf.
 */
import t, { type Test } from 'tap'
import { memcachedCRD } from '../operator/api/crd.ts'
import { loadChart } from '../operator/render/chart.ts'
import { startSandbox } from '../operator/sandbox/index.ts'
import type { ApiRequest, KubeObject } from '../operator/sandbox/types.ts'
import { controllersBed, kubectlFor, type Obj, until } from './support/controllers-bed.ts'

const hpa = (name: string, spec: Obj): Obj => ({ apiVersion: 'autoscaling/v2', kind: 'HorizontalPodAutoscaler', metadata: { name, namespace: 'default' }, spec })
const target = { apiVersion: 'apps/v1', kind: 'Deployment', name: 'web' }

async function sandbox(t: Test) {
  const sb = await startSandbox({ controllers: false, installCRDs: [memcachedCRD(loadChart()) as unknown as KubeObject] })
  t.teardown(() => sb.close())
  const create = (body: Obj) => sb.cluster.handle({ verb: 'create', group: 'autoscaling', version: 'v2', resource: 'horizontalpodautoscalers', namespace: 'default', query: new URLSearchParams(), body } as ApiRequest)
  return { sb, create, kubectl: kubectlFor(sb) }
}

t.test('kubectl autoscale creates an autoscaling/v2 HPA for a Memcached (scale subresource), a Deployment and a StatefulSet; kubectl get hpa prints it', async (t) => {
  const { kubectl } = await sandbox(t)
  await kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name: 'mc1', namespace: 'default' }, spec: { size: 2 } }))
  await kubectl(['create', 'deployment', 'web', '--image=memcached:1.6.38'])
  t.match(await kubectl(['autoscale', 'mc', 'mc1', '--min=2', '--max=5', '--cpu-percent=80']), /horizontalpodautoscaler.autoscaling\/mc1 autoscaled/)
  t.match(await kubectl(['autoscale', 'deploy', 'web', '--max=4', '--cpu=500m', '--memory=70%']), /horizontalpodautoscaler.autoscaling\/web autoscaled/)
  const mc1 = JSON.parse(await kubectl(['get', 'hpa', 'mc1', '-o', 'json'])) as Obj
  t.equal(mc1.apiVersion, 'autoscaling/v2')
  t.same(mc1.spec, { scaleTargetRef: { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', name: 'mc1' }, minReplicas: 2, maxReplicas: 5, metrics: [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 80 } } }] })
  t.same(mc1.status, { desiredReplicas: 0 })
  const web = JSON.parse(await kubectl(['get', 'hpa', 'web', '-o', 'json'])) as Obj
  t.equal(web.spec.minReplicas, 1, 'minReplicas defaults to 1')
  t.same(web.spec.metrics.map((m: Obj) => m.resource.target), [{ type: 'AverageValue', averageValue: '500m' }, { type: 'Utilization', averageUtilization: 70 }])
  const table = await kubectl(['get', 'hpa'])
  t.match(table, /^NAME\s+REFERENCE\s+TARGETS\s+MINPODS\s+MAXPODS\s+REPLICAS\s+AGE\n/)
  t.match(table, /\nmc1\s+Memcached\/mc1\s+cpu: <unknown>\/80%\s+2\s+5\s+0\s+\d+s\n/)
  t.match(table, /\nweb\s+Deployment\/web\s+cpu: <unknown>\/500m, memory: <unknown>\/70%\s+1\s+4\s+0\s+\d+s\n/)
  await kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 'db', namespace: 'default' }, spec: { serviceName: 'db', selector: { matchLabels: { app: 'db' } }, template: { metadata: { labels: { app: 'db' } }, spec: { containers: [{ name: 'memcached', image: 'memcached:1.6.38' }] } } } }))
  t.match(await kubectl(['autoscale', 'sts', 'db', '--max=3']), /horizontalpodautoscaler.autoscaling\/db autoscaled/)
  t.match(await kubectl(['get', 'hpa', 'db']), /\ndb\s+StatefulSet\/db\s+cpu: <unknown>\/80%\s+1\s+3\s+0\s/)
  t.match(await kubectl(['api-resources', '--api-group=autoscaling']), /horizontalpodautoscalers\s+hpa\s+autoscaling\/v2\s+true\s+HorizontalPodAutoscaler/)
})

t.test('kubectl apply of an HPA with maxReplicas below minReplicas is refused with the upstream message', async (t) => {
  const { kubectl } = await sandbox(t)
  await t.rejects(kubectl(['apply', '-f', '-'], JSON.stringify(hpa('bad', { scaleTargetRef: target, minReplicas: 3, maxReplicas: 2 }))), {
    message: /The HorizontalPodAutoscaler "bad" is invalid: spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`/,
  })
})

t.test('defaults (autoscaling/v2 SetDefaults_HorizontalPodAutoscaler): CPU 80% with no metrics, behavior rules filled in', async (t) => {
  const { create } = await sandbox(t)
  const res = await create(hpa('d', { scaleTargetRef: target, maxReplicas: 3, behavior: { scaleDown: { stabilizationWindowSeconds: 60 } } }))
  t.equal(res.status, 201)
  const spec = (res.body as Obj).spec
  t.equal(spec.minReplicas, 1)
  t.same(spec.metrics, [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 80 } } }])
  t.same(spec.behavior, {
    scaleUp: { stabilizationWindowSeconds: 0, selectPolicy: 'Max', policies: [{ type: 'Pods', value: 4, periodSeconds: 15 }, { type: 'Percent', value: 100, periodSeconds: 15 }] },
    scaleDown: { stabilizationWindowSeconds: 60, selectPolicy: 'Max', policies: [{ type: 'Percent', value: 100, periodSeconds: 15 }] },
  })
})

t.test('validation (autoscaling/validation validateHorizontalPodAutoscalerSpec): fields and messages', async (t) => {
  const { create } = await sandbox(t)
  const causes = async (spec: Obj) => {
    const res = await create(hpa('x', spec))
    t.equal(res.status, 422)
    return ((res.body as Obj).details.causes as Obj[]).map((c) => `${c.field}: ${c.message}`)
  }
  t.same(await causes({ scaleTargetRef: target, minReplicas: 0, maxReplicas: 0 }), [
    'spec.minReplicas: Invalid value: 0: must be greater than or equal to 1',
    'spec.maxReplicas: Invalid value: 0: must be greater than 0',
    'spec.metrics: Forbidden: must specify at least one Object or External metric to support scaling to zero replicas',
  ])
  t.same(await causes({ scaleTargetRef: { name: 'a/b' }, maxReplicas: 1 }), ['spec.scaleTargetRef.kind: Required value', "spec.scaleTargetRef.name: Invalid value: \"a/b\": may not contain '/'"])
  t.same(await causes({ scaleTargetRef: target, maxReplicas: 1, metrics: [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 0, averageValue: '1' } } }] }), [
    'spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater than 0',
    'spec.metrics[0].resource.target.averageValue: Forbidden: may not set both a target raw value and a target utilization',
  ])
  t.same(await causes({ scaleTargetRef: target, maxReplicas: 1, metrics: [{ type: 'Pods', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 50 } } }] }), [
    'spec.metrics[0].pods: Required value: must populate information for the given metric source',
  ])
  t.same(await causes({ scaleTargetRef: target, maxReplicas: 1, metrics: [{ type: 'Pods', pods: { metric: { name: 'qps' }, target: { type: 'AverageValue', averageValue: '10' } }, resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 50 } } }] }), [
    'spec.metrics[0].resource: Forbidden: must populate the given metric source only',
  ])
  t.same(await causes({ scaleTargetRef: target, maxReplicas: 1, behavior: { scaleUp: { policies: [{ type: 'Pods', value: 0, periodSeconds: 1801 }] } } }), [
    'spec.behavior.scaleUp.policies[0].value: Invalid value: 0: must be greater than zero',
    'spec.behavior.scaleUp.policies[0].periodSeconds: Invalid value: 1801: must be less than or equal to 1800',
  ])
})

t.test('the HPA controller (podautoscaler/horizontal.go reconcileAutoscaler) without a metrics API: bounds enforced through /scale, ScalingActive=False otherwise', async (t) => {
  const bed = await controllersBed(t, { podReadyDelayMs: 10, hpaSyncPeriodMs: 100, crds: [memcachedCRD(loadChart()) as unknown as KubeObject] })
  const kubectl = kubectlFor(bed.sb)
  const getHpa = async (name: string) => {
    const res = await bed.call({ verb: 'get', group: 'autoscaling', version: 'v2', resource: 'horizontalpodautoscalers', namespace: 'default', name })
    return res.status === 200 ? (res.body as Obj) : undefined
  }
  await kubectl(['create', 'deployment', 'web', '--image=memcached:1.6.38', '--replicas=1'])
  await kubectl(['autoscale', 'deploy', 'web', '--min=2', '--max=4', '--cpu=80%'])
  const scaled = await until('the Deployment scaled to minReplicas', async () => {
    const d = await bed.get('deployments', 'web', 'apps')
    return d?.spec.replicas === 2 ? d : undefined
  })
  t.equal(scaled.spec.replicas, 2)
  const hpa = await until('ScalingActive=False', async () => {
    const h = await getHpa('web')
    return h?.status.conditions?.some((c: Obj) => c.type === 'ScalingActive') ? h : undefined
  })
  t.equal(hpa.status.currentReplicas, 2)
  t.ok(hpa.status.lastScaleTime, 'lastScaleTime is set by the rescale')
  t.match(hpa.status.conditions, [
    { type: 'AbleToScale', status: 'True', reason: 'SucceededGetScale', message: "the HPA controller was able to get the target's current scale" },
    { type: 'ScalingActive', status: 'False', reason: 'FailedGetResourceMetric', message: 'the HPA was unable to compute the replica count: failed to get cpu utilization: unable to get metrics for resource cpu: unable to fetch metrics from resource metrics API: the server could not find the requested resource (get pods.metrics.k8s.io)' },
  ])
  const events = (await bed.list('events')).filter((e) => e.involvedObject.kind === 'HorizontalPodAutoscaler').map((e) => `${e.type} ${e.reason}: ${e.message}`)
  t.ok(events.includes('Normal SuccessfulRescale: New size: 2; reason: Current number of replicas below Spec.MinReplicas'))
  t.ok(events.includes('Warning FailedComputeMetricsReplicas: invalid metrics (1 invalid out of 1), first error is: failed to get cpu utilization: unable to get metrics for resource cpu: unable to fetch metrics from resource metrics API: the server could not find the requested resource (get pods.metrics.k8s.io)'))
  t.match(await kubectl(['get', 'hpa', 'web']), /\nweb\s+Deployment\/web\s+cpu: <unknown>\/80%\s+2\s+4\s+2\s/)

  // A Memcached above maxReplicas is scaled down through the CRD's scale subresource (spec.size).
  await kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name: 'mc1', namespace: 'default' }, spec: { size: 6 } }))
  await kubectl(['autoscale', 'mc', 'mc1', '--min=1', '--max=3'])
  await until('the Memcached scaled to maxReplicas', async () => (await bed.get('memcacheds', 'mc1', 'cache.example.com'))?.spec.size === 3)
  // A target at zero replicas is left alone.
  await kubectl(['scale', 'deploy', 'web', '--replicas=0'])
  const disabled = await until('ScalingDisabled', async () => {
    const h = await getHpa('web')
    return h?.status.conditions?.some((c: Obj) => c.reason === 'ScalingDisabled') ? h : undefined
  })
  t.match(disabled.status.conditions.find((c: Obj) => c.type === 'ScalingActive'), { status: 'False', message: 'scaling is disabled since the replica count of the target is zero' })
  t.equal((await bed.get('deployments', 'web', 'apps'))?.spec.replicas, 0)
})
