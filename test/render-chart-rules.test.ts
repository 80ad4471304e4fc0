/**
 * Rules between values (the `x-kubernetes-validations` of values.schema.json, which the CRD
 * carries too: test/sandbox-crd-cel.test.ts): each broken rule is a values error at its path, so
 * that the CR becomes InvalidSpec as for a schema error, and every broken rule is reported at
 * once. The rules judge the spec as the API server does, with the chart's defaults written into
 * them (`self.?memoryMB.orValue(64)`): the last tests hold those to values.yaml and the memory
 * rule to the memory the templates give (templates/_memory.ejs).
 */
import t from 'tap'
import { loadChart } from '../operator/render/chart.ts'
import { renderInstance } from '../operator/render/engine.ts'
import { RenderError } from '../operator/render/errors.ts'
import { outcomeOfRenderError } from '../operator/reconcile/status.ts'
import type { KubeObject } from '../operator/controller/client.ts'
import { eventually, startBed } from './support/operator.ts'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parse as parseYaml } from 'yaml'
import { validateRules, type RuleSchema } from '../operator/kube/cel/rules.ts'
import { mergeAll, type Values } from '../operator/render/values.ts'
import { memcachedCRD } from '../operator/api/crd.ts'
import { crdBeforeRules } from './support/crd-before-rules.ts'

const chart = loadChart()
const refusal = (spec: Record<string, unknown>): RenderError => {
  try {
    renderInstance(chart, { name: 'cache', namespace: 'team', spec: { size: 2, ...spec } })
  } catch (err) {
    if (err instanceof RenderError) return err
    throw err
  }
  throw new Error(`rendered: ${JSON.stringify(spec)}`)
}
const condition = (o: KubeObject, type: string) => ((o.status ?? {}) as { conditions?: { type: string; reason: string; message: string }[] }).conditions?.find((c) => c.type === type)
const renders = (spec: Record<string, unknown>) => renderInstance(chart, { name: 'cache', namespace: 'team', spec: { size: 2, ...spec } })

t.test('a StatefulSet needs the headless Service', async (t) => {
  const err = refusal({ workload: { kind: 'StatefulSet' }, service: { headless: false } })
  t.equal(err.kind, 'values')
  t.same(err.problems, ["spec.service.headless: must be true when spec.workload.kind is StatefulSet (the pods' stable DNS names come from the headless Service)"])
  t.same(outcomeOfRenderError(err), { kind: 'invalid', message: err.problems[0] }, 'InvalidSpec on the CR, like a schema error')
  t.ok(renders({ workload: { kind: 'StatefulSet' } }), 'the default Service is headless')
  t.ok(renders({ service: { headless: false } }), 'a Deployment may sit behind a ClusterIP')
})

t.test('a rolling-update configuration only with the rolling-update type, as apps/v1 validation requires', async (t) => {
  t.same(refusal({ workload: { strategy: { type: 'Recreate', rollingUpdate: { maxSurge: 1 } } } }).problems, ['spec.workload.strategy.rollingUpdate: must not be set when spec.workload.strategy.type is Recreate'])
  t.same(refusal({ workload: { kind: 'StatefulSet', updateStrategy: { type: 'OnDelete', rollingUpdate: { partition: 1 } } } }).problems, ['spec.workload.updateStrategy.rollingUpdate: must not be set when spec.workload.updateStrategy.type is OnDelete'])
  t.ok(renders({ workload: { strategy: { type: 'Recreate' } } }))
  t.ok(renders({ workload: { strategy: { rollingUpdate: { maxSurge: 1 } } } }), 'RollingUpdate is the default type')
})

t.test('a memory limit below what memcached needs (templates/_memory.ejs) is refused; quantities compare as Kubernetes reads them', async (t) => {
  t.same(refusal({ memoryMB: 1024, resources: { limits: { memory: '1100Mi' } } }).problems, [
    'spec.resources.limits.memory: must be at least 1153Mi: spec.memoryMB (1024) + 96Mi for memcached\'s hash table once full of small items + 1Mi for spec.maxConnections (1024) + 32Mi for the process (got "1100Mi"); leave it out to get exactly that',
  ])
  t.same(refusal({ memoryMB: 64, maxConnections: 4096, tls: { enabled: true, secretName: 'mc-tls' }, resources: { limits: { memory: '128Mi' } } }).problems, [
    'spec.resources.limits.memory: must be at least 166Mi: spec.memoryMB (64) + 6Mi for memcached\'s hash table once full of small items + 64Mi for spec.maxConnections (4096) under TLS + 32Mi for the process (got "128Mi"); leave it out to get exactly that',
  ], 'TLS connections cost 16Ki each')
  t.same(refusal({ memoryMB: 64, resources: { limits: { memory: '100M' } } }).problems, [
    'spec.resources.limits.memory: must be at least 103Mi: spec.memoryMB (64) + 6Mi for memcached\'s hash table once full of small items + 1Mi for spec.maxConnections (1024) + 32Mi for the process (got "100M"); leave it out to get exactly that',
  ], '100M (decimal) is 95.4Mi')
  t.ok(renders({ memoryMB: 64, resources: { limits: { memory: '103Mi' } } }), 'exactly what memcached needs is enough')
  t.ok(renders({ memoryMB: 1024, resources: { limits: { memory: '1.5Gi' } } }))
  t.ok(renders({ memoryMB: 64, resources: { limits: { memory: 200000000 } } }), 'a number of bytes')
  t.ok(renders({ memoryMB: 4096 }), 'without a limit of its own the limit follows memoryMB')
})

t.test('a preStop sleep must end before the grace period does', async (t) => {
  t.same(refusal({ lifecycle: { preStopSleepSeconds: 30 } }).problems, [
    "spec.terminationGracePeriodSeconds: must exceed spec.lifecycle.preStopSleepSeconds (30), or the pod is killed before memcached gets SIGTERM (unset: Kubernetes' 30)",
  ])
  t.same(refusal({ lifecycle: { preStopSleepSeconds: 60 }, terminationGracePeriodSeconds: 45 }).problems, [
    'spec.terminationGracePeriodSeconds: must exceed spec.lifecycle.preStopSleepSeconds (60), or the pod is killed before memcached gets SIGTERM (got 45)',
  ])
  t.ok(renders({ lifecycle: { preStopSleepSeconds: 29 } }))
  t.ok(renders({ lifecycle: { preStopSleepSeconds: 60 }, terminationGracePeriodSeconds: 90 }))
})

t.test('maxItemSize is held to memcached\'s own start-up checks (test/memcached-start.test.ts runs the binary with them)', async (t) => {
  t.same(refusal({ maxItemSize: '512' }).problems, ['spec.maxItemSize: must be a multiple of 512k (memcached\'s slab_chunk_max), e.g. 512k, 1m, 1536k, 2m (got "512")'])
  t.same(refusal({ maxItemSize: '256k' }).problems, ['spec.maxItemSize: must be a multiple of 512k (memcached\'s slab_chunk_max), e.g. 512k, 1m, 1536k, 2m (got "256k")'], 'below slab_chunk_max')
  t.same(refusal({ maxItemSize: '700k' }).problems, ['spec.maxItemSize: must be a multiple of 512k (memcached\'s slab_chunk_max), e.g. 512k, 1m, 1536k, 2m (got "700k")'], 'not evenly divisible')
  t.same(refusal({ maxItemSize: '2048m', memoryMB: 8192 }).problems, ['spec.maxItemSize: must be at most 1024m (got "2048m")'])
  t.same(refusal({ maxItemSize: '33m' }).problems, ['spec.maxItemSize: must be at most half of spec.memoryMB (64), memcached refuses to start otherwise (got "33m")'])
  t.same(refusal({ memoryMB: 1 }).problems, ["spec.memoryMB: must be at least 2, twice memcached's default item size of 1m (spec.maxItemSize unset)"], 'the default -I counts too')
  t.ok(renders({ maxItemSize: '32m' }), 'exactly half')
  t.ok(renders({ maxItemSize: '1024k' }))
  t.ok(renders({ maxItemSize: '1536k' }))
  t.ok(renders({ memoryMB: 1, maxItemSize: '512k' }))
  t.same(refusal({ maxItemSize: '1g' }).problems, ['spec.maxItemSize: must match pattern "^[1-9][0-9]*[kKmM]?$" (got "1g")'], 'the schema knows the units')
})

t.test('maxConnections leaves room for memcached\'s threads: it limits its open files to -c (test/memcached-start.test.ts runs the binary)', async (t) => {
  t.same(refusal({ maxConnections: 20 }).problems, ["spec.maxConnections: must be at least 36, 5 per worker thread (spec.threads: unset, memcached's 4) and 16 more: memcached limits its open files to -c, and its threads take 5 each (got 20)"])
  t.same(refusal({ maxConnections: 1024, threads: 1024 }).problems, ['spec.maxConnections: must be at least 5136, 5 per worker thread (spec.threads: 1024) and 16 more: memcached limits its open files to -c, and its threads take 5 each (got 1024)'])
  t.ok(renders({ maxConnections: 36 }))
  t.ok(renders({ maxConnections: 21, threads: 1 }))
})

t.test('TLS needs a Secret or cert-manager, and cert-manager an issuer', async (t) => {
  t.same(refusal({ tls: { enabled: true } }).problems, ['spec.tls.secretName: is required when spec.tls.enabled is true (or let cert-manager write it: spec.tls.certManager.enabled)'])
  t.same(refusal({ tls: { enabled: true, certManager: { enabled: true } } }).problems, ['spec.tls.certManager.issuerRef.name: is required when spec.tls.certManager.enabled is true'])
  t.same(refusal({ tls: { certManager: { enabled: true, issuerRef: { name: 'ca' } } } }).problems, ['spec.tls.certManager.enabled: needs spec.tls.enabled'])
  t.same(refusal({ tls: { enabled: true, clientAuth: 'always' } }).problems, ['spec.tls.clientAuth: must be one of "none", "request", "require", "once" (got "always")'])
})

t.test('auth needs its Secret, and the exporter cannot run beside it', async (t) => {
  t.same(refusal({ auth: { enabled: true } }).problems, ['spec.auth.secretName: is required when spec.auth.enabled is true'])
  t.same(refusal({ auth: { enabled: true, secretName: 'users' }, metrics: { enabled: true } }).problems, [
    "spec.metrics.enabled: the exporter cannot authenticate to memcached (it has no credentials for -Y's auth file): disable spec.metrics or spec.auth",
  ])
  t.same(refusal({ auth: { enabled: true, mode: 'sasl', secretName: 'users' }, metrics: { enabled: true } }).problems, [
    'spec.metrics.enabled: the exporter cannot authenticate to memcached (it has no credentials for -S, which also turns the ASCII protocol it speaks off): disable spec.metrics or spec.auth',
  ])
})

t.test('what uses the exporter needs the exporter', async (t) => {
  t.same(refusal({ metrics: { serviceMonitor: { enabled: true }, prometheusRule: { enabled: true }, dashboard: { enabled: true } } }).problems, [
    'spec.metrics.serviceMonitor.enabled: needs spec.metrics.enabled (the exporter)',
    'spec.metrics.prometheusRule.enabled: needs spec.metrics.enabled (the exporter)',
    'spec.metrics.dashboard.enabled: needs spec.metrics.enabled (the exporter)',
  ])
})

t.test('every broken rule is reported at once', async (t) => {
  const err = refusal({ workload: { kind: 'StatefulSet' }, service: { headless: false }, lifecycle: { preStopSleepSeconds: 40 }, auth: { enabled: true } })
  t.equal(err.kind, 'values')
  t.equal(err.problems.length, 3)
  t.match(err.message, /^3 problems:\n {2}- spec\.service\.headless: .*\n {2}- spec\.terminationGracePeriodSeconds: .*\n {2}- spec\.auth\.secretName: /)
})

t.test('a rule is not run over a value of the wrong type: the schema error alone is reported, as the API server does', async (t) => {
  t.same(refusal({ port: 'x', workload: { kind: 'StatefulSet' }, service: { headless: false } }).problems, ['spec.port: must be integer (got "x")'])
  t.same(refusal({ port: 'x', resources: { limits: { memory: 'lots' } } }).problems, [
    'spec.port: must be integer (got "x")',
    'spec.resources.limits.memory: must be a Kubernetes quantity such as 512Mi, 1Gi, 500m or 2 (got "lots")',
  ], 'a rule of a field untouched by the schema errors still runs')
})

t.test('the new values are typed: enums, bounds and patterns are schema errors at their paths', async (t) => {
  t.same(refusal({ workload: { kind: 'DaemonSet' } }).problems, ['spec.workload.kind: must be one of "Deployment", "StatefulSet" (got "DaemonSet")'])
  t.same(refusal({ podAntiAffinityPreset: 'always' }).problems, ['spec.podAntiAffinityPreset: must be one of "soft", "hard", "none" (got "always")'])
  t.same(refusal({ verbosity: 3 }).problems, ['spec.verbosity: must be <= 2 (got 3)'])
  t.same(refusal({ threads: 0 }).problems, ['spec.threads: must be >= 1 (got 0)'])
  t.same(refusal({ imagePullSecrets: ['Not_A_Name'] }).problems, ['spec.imagePullSecrets[0]: must match pattern "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$" (got "Not_A_Name")'])
  t.same(refusal({ metrics: { serviceMonitor: { interval: 'often' } } }).problems, ['spec.metrics.serviceMonitor.interval: must match pattern "^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$" (got "often")'])
  t.same(refusal({ auth: { mode: 'ldap' } }).problems, ['spec.auth.mode: must be one of "authfile", "sasl" (got "ldap")'])
  t.same(refusal({ networkPolicy: { allowedSources: [{ ipBlock: {} }] } }).problems, ['spec.networkPolicy.allowedSources[0].ipBlock.cidr: is required'])
})

t.test('through the API server: a CR that breaks a rule is refused at once; one stored before the rules is InvalidSpec with its path, and nothing is applied', async (t) => {
  const bed = await startBed({ sandbox: { installCRDs: [crdBeforeRules(chart)] } })
  t.teardown(() => bed.stop())
  const MC = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached' }
  await bed.client.create({ ...MC, metadata: { name: 'sts', namespace: 'default' }, spec: { size: 2, workload: { kind: 'StatefulSet' }, service: { headless: false } } })
  const cr = await eventually('Degraded InvalidSpec', async () => {
    const c = await bed.client.get({ ...MC, namespace: 'default', name: 'sts' })
    return condition(c, 'Degraded')?.reason === 'InvalidSpec' ? c : undefined
  })
  const message = "spec.service.headless: must be true when spec.workload.kind is StatefulSet (the pods' stable DNS names come from the headless Service)"
  t.equal(condition(cr, 'Degraded')?.message, message)
  const sets = await bed.client.list({ apiVersion: 'apps/v1', kind: 'StatefulSet' }, { namespace: 'default' })
  t.same(sets.items, [], 'no StatefulSet')

  // The chart's CRD, with its rules: a new CR like it is refused, with the message the operator gave.
  const crds = { verb: 'get', group: 'apiextensions.k8s.io', version: 'v1', resource: 'customresourcedefinitions', name: 'memcacheds.cache.example.com', query: new URLSearchParams() } as const
  const got = bed.sandbox.cluster.respond(crds)
  const stored = (got.body ?? JSON.parse(got.json ?? '{}')) as KubeObject
  const replaced = bed.sandbox.cluster.respond({ ...crds, verb: 'update', body: { ...memcachedCRD(chart), metadata: stored.metadata } })
  t.equal(replaced.status, 200, 'the CRD now has the rules')
  const err = await bed.client.create({ ...MC, metadata: { name: 'sts2', namespace: 'default' }, spec: { size: 2, workload: { kind: 'StatefulSet' }, service: { headless: false } } }).then(() => undefined, (e: unknown) => e as { status: number; message: string })
  t.equal(err?.status, 422)
  t.equal(err?.message, `Memcached.cache.example.com "sts2" is invalid: spec.service.headless: Invalid value: ${message.slice('spec.service.headless: '.length)}`)
  // The stored one may still be touched where it breaks nothing new (ratcheting), and the operator still writes its status.
  const labelled = await bed.client.patch({ ...MC, namespace: 'default', name: 'sts' }, { metadata: { labels: { team: 'a' } } }, { type: 'merge' })
  t.equal(labelled.metadata.labels?.team, 'a')
})

const rulesOn = (values: unknown) => validateRules(chart.schema as RuleSchema, values, undefined, 'spec').errors.map((f) => `${f.field}: ${f.detail}`)

t.test("the rules' defaults are the chart's: a spec and the same spec merged over values.yaml get the same verdicts", async (t) => {
  const root = join(import.meta.dirname, '..')
  const specs: { label: string; spec: Values }[] = [
    { label: 'values.yaml itself', spec: {} },
    ...readdirSync(join(root, 'charts/memcached/ci')).filter((f) => f.endsWith('.yaml')).map((f) => ({ label: `ci/${f}`, spec: parseYaml(readFileSync(join(root, 'charts/memcached/ci', f), 'utf8')) as Values })),
    // Each rule broken by the spec alone, so that its default-reading half is exercised too.
    { label: 'StatefulSet', spec: { workload: { kind: 'StatefulSet' }, service: { headless: false } } },
    { label: 'memory', spec: { resources: { limits: { memory: '64Mi' } } } },
    { label: 'grace', spec: { lifecycle: { preStopSleepSeconds: 30 } } },
    { label: 'item size', spec: { maxItemSize: '64m' } },
    { label: 'threads', spec: { threads: 300 } },
    { label: 'tls', spec: { tls: { enabled: true } } },
    { label: 'cert-manager', spec: { tls: { certManager: { enabled: true } } } },
    { label: 'auth', spec: { auth: { enabled: true }, metrics: { enabled: true } } },
    { label: 'exporter users', spec: { metrics: { serviceMonitor: { enabled: true }, prometheusRule: { enabled: true }, dashboard: { enabled: true } } } },
    { label: 'strategies', spec: { workload: { strategy: { type: 'Recreate', rollingUpdate: {} }, updateStrategy: { type: 'OnDelete', rollingUpdate: {} } } } },
  ]
  for (const { label, spec } of specs) t.same(rulesOn(spec), rulesOn(mergeAll([chart.defaults, spec])), label)
})

t.test('the memory rule asks for exactly the memory the templates give when no limit is set (templates/_memory.ejs)', async (t) => {
  // Around the hash table's growth points (memoryMB = 9·2^k), the smallest and the largest sizes.
  const sizes = [1, 8, 9, 10, 64, 72, 73, 1152, 1153, 4096, 589824, 589825, 1048576]
  for (const memoryMB of sizes) {
    for (const [maxConnections, tls, extstore] of [[1024, false, false], [4096, true, false], [1000000, false, true], [37, true, true]] as const) {
      const spec: Values = { size: 1, memoryMB, maxConnections, threads: 1, maxItemSize: '512k', tls: { enabled: tls, secretName: 'mc-tls' }, extstore: { enabled: extstore } }
      const out = renders(spec)
      const workload = out.objects.find((o) => o.kind === 'Deployment') as unknown as { spec: { template: { spec: { containers: { name: string; resources: { limits: { memory: string } } }[] } } } }
      const limit = workload.spec.template.spec.containers.find((c) => c.name === 'memcached')!.resources.limits.memory
      const need = Number(/^(\d+)Mi$/.exec(limit)![1])
      const label = JSON.stringify({ memoryMB, maxConnections, tls, extstore })
      t.same(rulesOn({ ...spec, resources: { limits: { memory: limit } } }).filter((p) => p.startsWith('spec.resources')), [], `${label}: ${limit} is enough`)
      t.match(rulesOn({ ...spec, resources: { limits: { memory: `${need - 1}Mi` } } }), [new RegExp(`^spec\\.resources\\.limits\\.memory: must be at least ${need}Mi: `)], `${label}: ${need - 1}Mi is not`)
    }
  }
})
