/**
 * Fields a built-in kind does not have, judged against upstream's schema of the kind as decoding
 * into its Go type judges them: dropped, reported as warnings (`fieldValidation=Warn`, the
 * default), or refused (`Strict`) with each handler's own wording — handlers/create.go and
 * update.go `transformDecodeError`, handlers/patch.go `errors.NewInvalid` on `patch`, and the
 * apply's typed conversion (`field not declared in schema`).
 */
import t from 'tap'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { createCluster, startSandbox } from '../operator/sandbox/index.ts'
import { builtinPruner } from '../operator/sandbox/prune.ts'
import { call, deployment, widgetCRDs } from './support/sandbox-requests.ts'
import { kubectlPath } from './support/tools.ts'
import { tempDir } from './support/tmp.ts'

const CM = '/api/v1/namespaces/default/configmaps'
const D = '/apis/apps/v1/namespaces/default/deployments'

const cm = (extra: Record<string, unknown> = {}) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'default' }, data: { a: '1' }, ...extra })

t.test('create: Strict refuses with the decoder\'s message, Warn drops and warns, Ignore drops silently', async (t) => {
  const c = createCluster()
  const strict = call(c, `POST ${CM}?fieldValidation=Strict`, cm({ bogus: 1 }))
  t.equal(strict.status, 400)
  t.equal(strict.body.reason, 'BadRequest')
  t.equal(strict.body.message, 'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "bogus"')
  const warn = call(c, `POST ${CM}`, cm({ bogus: 1 }))
  t.equal(warn.status, 201)
  t.equal(warn.headers['Warning'] ?? warn.headers['warning'], '299 - "unknown field \\"bogus\\""', 'a Warning header as the server writes it')
  t.equal(warn.body.bogus, undefined, 'not stored')
  t.equal(call(c, `DELETE ${CM}/c`).status, 200)
  const ignore = call(c, `POST ${CM}?fieldValidation=Ignore`, cm({ bogus: 1 }))
  t.equal(ignore.status, 201)
  t.notOk(ignore.headers['Warning'] ?? ignore.headers['warning'])
  t.equal(ignore.body.bogus, undefined)
})

t.test('nested unknown fields are named by their path, list items by index, in the order of the document (replicass comes last in this body) (the messages kubectl users see)', async (t) => {
  const c = createCluster()
  const d = deployment('web') as Record<string, any>
  d.spec.replicass = 2
  d.spec.template.spec.containers[0].imagee = 'x'
  d.spec.template.spec.containers[0].ports = [{ containerPorts: 11211 }]
  const r = call(c, `POST ${D}?fieldValidation=Strict`, d)
  t.equal(r.status, 400)
  t.equal(r.body.message, 'Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: unknown field "spec.template.spec.containers[0].imagee", unknown field "spec.template.spec.containers[0].ports[0].containerPorts", unknown field "spec.replicass"')
  const put = deployment('web') as Record<string, any>
  t.equal(call(c, `POST ${D}`, put).status, 201)
  const got = call(c, `GET ${D}/web`).body
  got.spec.paused2 = true
  const upd = call(c, `PUT ${D}/web?fieldValidation=Strict`, got)
  t.equal(upd.body.message, 'Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: unknown field "spec.paused2"', 'an update words it as a create does')
})

t.test('free-form fields keep what they hold: annotations, managedFields\' fieldsV1, resource quantities', async (t) => {
  const prune = builtinPruner('apps', 'v1', 'Deployment')!
  const obj = deployment('free') as Record<string, any>
  obj.metadata.annotations = { anything: 'goes' }
  obj.metadata.managedFields = [{ manager: 'm', operation: 'Apply', apiVersion: 'apps/v1', fieldsType: 'FieldsV1', fieldsV1: { 'f:spec': { 'f:replicas': {} } } }]
  obj.spec.template.spec.containers[0].resources = { limits: { memory: '64Mi', 'example.com/gpu': '1' } }
  const before = JSON.stringify(obj)
  t.same(prune(obj), [])
  t.equal(JSON.stringify(obj), before)
})

t.test('patches: Strict is 422 on the field "patch", valued with the patched object (merge) or Go\'s print of the patch (strategic); Warn keeps the patch and drops the field', async (t) => {
  const c = createCluster()
  t.equal(call(c, `POST ${CM}`, cm()).status, 201)
  const merge = call(c, `PATCH ${CM}/c?fieldValidation=Strict`, { bogus: { x: 1 } })
  t.equal(merge.status, 422)
  t.equal(merge.body.reason, 'Invalid')
  t.match(merge.body.message, /^ "" is invalid: patch: Invalid value: "\{\\"apiVersion\\":\\"v1\\",\\"bogus\\":\{\\"x\\":1\},\\"data\\":\{\\"a\\":\\"1\\"\},\\"kind\\":\\"ConfigMap\\",\\"metadata\\":\{.*\}": strict decoding error: unknown field "bogus"$/)
  t.same(merge.body.details, { causes: [{ reason: 'FieldValueInvalid', message: merge.body.message.slice(' "" is invalid: patch: '.length), field: 'patch' }] })
  const smp = call(c, `PATCH ${CM}/c?fieldValidation=Strict`, { data: { b: '2' }, bogus: [1, 'x'] }, { type: 'strategic' })
  t.equal(smp.status, 422)
  t.equal(smp.body.message, ' "" is invalid: patch: Invalid value: "map[bogus:[1 x] data:map[b:2]]": strict decoding error: unknown field "bogus"')
  const warned = call(c, `PATCH ${CM}/c`, { data: { b: '2' }, bogus: 1 })
  t.equal(warned.status, 200)
  t.same(warned.body.data, { a: '1', b: '2' })
  t.equal(warned.body.bogus, undefined)
})

t.test('server-side apply of an undeclared field fails the typed conversion, whatever fieldValidation says', async (t) => {
  const c = createCluster()
  const d = deployment('typed') as Record<string, any>
  d.spec.replicass = 1
  for (const mode of ['Strict', 'Ignore']) {
    const r = call(c, `PATCH ${D}/typed?fieldManager=chart&fieldValidation=${mode}`, d, { type: 'apply' })
    t.equal(r.status, 500, mode)
    t.equal(r.body.message, 'failed to create typed patch object (default/typed; apps/v1, Kind=Deployment): .spec.replicass: field not declared in schema')
  }
})

t.test('real kubectl: apply refuses a typo in a built-in kind, as a cluster does', async (t) => {
  const sb = await startSandbox({ controllers: false })
  t.teardown(() => sb.close())
  const run = promisify(execFile)(kubectlPath(), ['--kubeconfig', sb.kubeconfigPath, '--cache-dir', tempDir('mc-kubectl-cache-'), 'apply', '-f', '-'], { timeout: 60_000 })
  run.child.stdin?.end('apiVersion: v1\nkind: ConfigMap\nmetadata: {name: typo, namespace: default}\ndatta: {a: "1"}\n')
  const err = (await run.then(() => undefined, (e: unknown) => e)) as { code?: number; stderr?: string } | undefined
  t.equal(err?.code, 1)
  t.match(err?.stderr, 'Error from server (BadRequest): error when creating "STDIN": ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "datta"')
})

t.test('a custom resource\'s unknown fields are refused in the same words (the CRD schema judges them; create.go wraps the decoder\'s error alike)', async (t) => {
  const c = createCluster()
  for (const crd of widgetCRDs()) t.equal(call(c, 'POST /apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd).status, 201)
  const W = '/apis/test.example.com/v1/namespaces/default/widgets'
  const r = call(c, `POST ${W}?fieldValidation=Strict`, { apiVersion: 'test.example.com/v1', kind: 'Widget', metadata: { name: 'w' }, spec: { size: 1, bogus: true } })
  t.equal(r.status, 400)
  t.equal(r.body.message, 'Widget in version "v1" cannot be handled as a Widget: strict decoding error: unknown field "spec.bogus"')
})

t.test('a quantity that does not parse fails decoding, before anything else, in each handler\'s words (resource.Quantity UnmarshalJSON, through upstream\'s schema of the kind)', async (t) => {
  const c = createCluster()
  const FORMAT = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
  const bad = (memory: string) => {
    const d = deployment('q') as Record<string, any>
    d.spec.template.spec.containers[0].resources = { limits: { memory } }
    return d
  }
  const create = call(c, `POST ${D}`, bad('64mb'))
  t.equal(create.status, 400)
  t.equal(create.body.message, `Deployment in version "v1" cannot be handled as a Deployment: ${FORMAT}`)
  t.equal(call(c, `POST ${D}`, bad('512Gu')).body.message, "Deployment in version \"v1\" cannot be handled as a Deployment: unable to parse quantity's suffix")
  const apply = call(c, `PATCH ${D}/q?fieldManager=chart`, bad('64mb'), { type: 'apply' })
  t.equal(apply.status, 500)
  t.equal(apply.body.message, `failed to convert new object (default/q; apps/v1, Kind=Deployment) to proper version: ${FORMAT}`)
  t.equal(call(c, `POST ${D}`, bad('64Mi')).status, 201, 'a good one is taken')
  const patch = call(c, `PATCH ${D}/q`, { spec: { template: { spec: { containers: [{ name: 'memcached', resources: { limits: { memory: 'lots' } } }] } } } }, { type: 'strategic' })
  t.equal(patch.status, 422)
  t.match(patch.body.message, new RegExp(`^ "" is invalid: patch: Invalid value: "map\\[spec:.*\\]": ${FORMAT.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`))
  const cm = call(c, `POST ${CM}`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'not-a-quantity' }, data: { memory: '64mb' } })
  t.equal(cm.status, 201, 'a string that is not a quantity field is left alone')
})

t.test('a /status update is judged on its status and metadata: unknown fields there are dropped with a warning (Strict refuses), a bad quantity there fails decoding, the stored spec stays as it was', async (t) => {
  const c = createCluster()
  const FORMAT = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
  t.equal(call(c, `POST ${D}`, deployment('s')).status, 201)
  const withStatus = (status: Record<string, unknown>) => ({ ...call(c, `GET ${D}/s`).body, status })
  const strict = call(c, `PUT ${D}/s/status?fieldValidation=Strict`, withStatus({ replicas: 1, bogus: 2, conditions: [{ type: 'Available', status: 'True', zzz: 1 }] }))
  t.equal(strict.status, 400)
  t.equal(strict.body.message, 'Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: unknown field "status.bogus", unknown field "status.conditions[0].zzz"')
  const warn = call(c, `PUT ${D}/s/status`, withStatus({ replicas: 1, bogus: 2 }))
  t.equal(warn.status, 200)
  t.equal(warn.headers['Warning'] ?? warn.headers['warning'], '299 - "unknown field \\"status.bogus\\""')
  t.same(warn.body.status, { replicas: 1 }, 'the unknown field is not stored')
  t.same(warn.body.spec, call(c, `GET ${D}/s`).body.spec)
  t.equal(warn.body.spec.replicas, (deployment('s') as Record<string, any>).spec.replicas, 'the spec is the stored one')

  const P = '/api/v1/namespaces/default/pods'
  const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { containers: [{ name: 'c', image: 'busybox' }] } }
  t.equal(call(c, `POST ${P}`, pod).status, 201)
  const badStatus = { ...call(c, `GET ${P}/p`).body, status: { phase: 'Running', containerStatuses: [{ name: 'c', ready: true, restartCount: 0, image: 'busybox', imageID: '', allocatedResources: { memory: '64mb' } }] } }
  const refused = call(c, `PUT ${P}/p/status`, badStatus)
  t.equal(refused.status, 400)
  t.equal(refused.body.message, `Pod in version "v1" cannot be handled as a Pod: ${FORMAT}`)
  t.equal(call(c, `GET ${P}/p`).body.status.phase, 'Pending', 'nothing was written')
})
