/**
 * A built-in object whose values have the wrong JSON type, judged as kube-apiserver's two readers
 * of a body judge it: decoding into the kind's Go type (sigs.k8s.io/json
 * internal/golang/encoding/json/decode.go `UnmarshalTypeError`, wrapped by handlers/create.go and
 * update.go `transformDecodeError` into a 400, by handlers/patch.go into a 422 on `patch`), and
 * the typed conversion of a server-side apply configuration (structured-merge-diff
 * typed/validate.go, a 500). Enumerations the validation code refuses
 * (pkg/apis/core/validation/validation.go `validateContainerPorts`, `ValidateService`) are 422s.
 */
import t from 'tap'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { decodeError } from '../operator/kube/openapi-validate.ts'
import { applyErrors, applyErrorText, goFloat } from '../operator/kube/openapi-apply.ts'
import { createCluster, startSandbox } from '../operator/sandbox/index.ts'
import { call, deployment } from './support/sandbox-requests.ts'
import { kubectlPath } from './support/tools.ts'
import { tempDir } from './support/tmp.ts'

const CM = '/api/v1/namespaces/default/configmaps'
const SVC = '/api/v1/namespaces/default/services'
const D = '/apis/apps/v1/namespaces/default/deployments'
const SECRETS = '/api/v1/namespaces/default/secrets'

const cm = (data: unknown) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'default' }, data })
const svc = (port: Record<string, unknown>) => ({ apiVersion: 'v1', kind: 'Service', metadata: { name: 's', namespace: 'default' }, spec: { selector: { app: 's' }, ports: [{ port: 80, ...port }] } })

t.test('decode.go: an integer in a ConfigMap\'s data is refused 400 on create and update, with the decoder\'s message; nothing is stored', async (t) => {
  const c = createCluster()
  const bad = call(c, `POST ${CM}`, cm({ size: 3 }))
  t.equal(bad.status, 400)
  t.equal(bad.body.reason, 'BadRequest')
  t.equal(bad.body.message, 'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct field ConfigMap.data of type string')
  t.equal(call(c, `GET ${CM}/c`).status, 404, 'nothing stored')
  t.equal(call(c, `POST ${CM}`, cm({ size: '3' })).status, 201)
  const put = call(c, `GET ${CM}/c`).body as Record<string, unknown>
  const upd = call(c, `PUT ${CM}/c`, { ...put, data: { size: true } })
  t.equal(upd.status, 400)
  t.equal(upd.body.message, 'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal bool into Go struct field ConfigMap.data of type string')
})

t.test('decode.go: the first wrong type in document order, named by its innermost struct, the JSON path from the root and the Go type', async (t) => {
  const c = createCluster()
  const d = deployment('x') as Record<string, any>
  d.spec.replicas = 1.5
  d.spec.template.spec.containers[0].env = [{ name: 'A', value: 3 }]
  const r = call(c, `POST ${D}`, d)
  t.equal(r.status, 400)
  t.equal(r.body.message, 'Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.replicas of type int32')
  d.spec.replicas = 2
  t.equal(call(c, `POST ${D}`, d).body.message, 'Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal number into Go struct field EnvVar.spec.template.spec.containers.env.value of type string')
  // A named Go type (core/v1 types.go `Protocol Protocol`) is named as the decoder names it.
  t.equal(call(c, `POST ${SVC}`, svc({ protocol: 6 })).body.message, 'Service in version "v1" cannot be handled as a Service: json: cannot unmarshal number into Go struct field ServicePort.spec.ports.protocol of type v1.Protocol')
  t.equal(call(c, `POST ${SVC}`, svc({ port: 3000000000 })).body.message, 'Service in version "v1" cannot be handled as a Service: json: cannot unmarshal number 3000000000 into Go struct field ServicePort.spec.ports.port of type int32')
})

t.test('a JSON or merge patch that leaves a wrong type fails decoding the patched object: 422 on the field patch (handlers/patch.go)', async (t) => {
  const c = createCluster()
  t.equal(call(c, `POST ${CM}`, cm({ a: 'x' })).status, 201)
  const r = call(c, `PATCH ${CM}/c`, { data: { a: 1 } }, { type: 'merge' })
  t.equal(r.status, 422)
  t.match(r.body.message, /^ "" is invalid: patch: Invalid value: ".*": json: cannot unmarshal number into Go struct field ConfigMap.data of type string$/)
})

t.test('server-side apply: the typed conversion refuses a wrong type, 500, with structured-merge-diff\'s words and list items by key', async (t) => {
  const c = createCluster()
  const r = call(c, `PATCH ${CM}/c?fieldManager=chart`, cm({ size: 3 }), { type: 'apply' })
  t.equal(r.status, 500)
  t.equal(r.body.message, 'failed to create typed patch object (default/c; /v1, Kind=ConfigMap): .data.size: expected string, got &value.valueUnstructured{Value:3}')
  const d = deployment('typed') as Record<string, any>
  d.spec.replicas = 'two'
  d.spec.template.spec.containers[0].env = [{ name: 'A', value: 3 }]
  const name = d.spec.template.spec.containers[0].name as string
  const two = call(c, `PATCH ${D}/typed?fieldManager=chart`, d, { type: 'apply' })
  t.equal(two.status, 500)
  t.equal(two.body.message, `failed to create typed patch object (default/typed; apps/v1, Kind=Deployment): errors:\n  .spec.replicas: expected numeric (int or float), got string\n  .spec.template.spec.containers[name="${name}"].env[name="A"].value: expected string, got &value.valueUnstructured{Value:3}`)
  t.equal(call(c, `GET ${D}/typed`).status, 404, 'nothing stored')
})

t.test('the value printers of structured-merge-diff (Go %#v, %v and %T of decoded JSON)', async (t) => {
  const errs = (cfg: Record<string, unknown>) => applyErrorText(applyErrors('', 'v1', 'ConfigMap', cfg)!)
  t.equal(errs({ data: { a: ['x', 1] } }), '.data.a: expected string, got &value.valueUnstructured{Value:[]interface {}{"x", 1}}')
  t.equal(errs({ data: { a: { b: 1, a: 'x' } } }), '.data.a: expected string, got &value.valueUnstructured{Value:map[string]interface {}{"a":"x", "b":1}}')
  t.equal(errs({ data: 'x' }), '.data: expected map, got &{x}')
  t.equal(errs({ immutable: 'yes' }), '.immutable: expected boolean, got &{yes}')
  t.equal(errs({ data: { a: 1e6 } }), '.data.a: expected string, got &value.valueUnstructured{Value:1e+06}')
  t.same([3, 1.5, 1e6, 123456, 1234567, 0.0001, 0.00001, 1e21, -0].map(goFloat), ['3', '1.5', '1e+06', '123456', '1.234567e+06', '0.0001', '1e-05', '1e+21', '-0'], 'strconv ftoa.go %g, shortest')
  t.same(applyErrors('', 'v1', 'Service', { spec: { ports: [{ port: 80, protocol: 'UDP', targetPort: {} }, { port: 81, name: 1 }] } }), ['.spec.ports[port=80,protocol="UDP"].targetPort: expected any scalar, got &{map[]}', '.spec.ports[port=81,protocol="TCP"].name: expected string, got &value.valueUnstructured{Value:1}'], 'a key field left out takes its default (protocol TCP)')
  t.same(applyErrors('', 'v1', 'Service', { spec: { ports: ['x'] } }), ['.spec.ports: element 0: associative list with keys may not have non-map elements'])
  t.equal(applyErrors('example.com', 'v1', 'Widget', {}), undefined, 'a kind without a schema')
})

t.test('custom unmarshalers end decoding with their own errors: IntOrString, Time, a Quantity; base64 of []byte', async (t) => {
  t.equal(decodeError('', 'v1', 'Service', svc({ targetPort: true })), 'json: cannot unmarshal bool into Go value of type int32', 'intstr.go UnmarshalJSON')
  t.equal(decodeError('', 'v1', 'Service', svc({ targetPort: 1.5 })), 'json: cannot unmarshal number 1.5 into Go value of type int32')
  t.equal(decodeError('', 'v1', 'Service', svc({ targetPort: 'http' })), undefined)
  t.equal(decodeError('', 'v1', 'ConfigMap', { metadata: { creationTimestamp: 5 } }), 'json: cannot unmarshal number into Go value of type string', 'time.go UnmarshalJSON')
  // A Quantity's error ends decoding, even after an earlier type error (decode.go returns it, not the saved one).
  const d = deployment('q') as Record<string, any>
  d.spec.replicas = 'x'
  d.spec.template.spec.containers[0].resources = { limits: { memory: '1Gu' } }
  t.equal(decodeError('apps', 'v1', 'Deployment', d), "unable to parse quantity's suffix")
  t.equal(decodeError('', 'v1', 'Secret', { data: { a: 'abc' } }), 'illegal base64 data at input byte 0', 'base64.go decodeQuantum: a quantum cut short')
  t.equal(decodeError('', 'v1', 'Secret', { data: { a: 'YW*j' } }), 'illegal base64 data at input byte 2')
  t.equal(decodeError('', 'v1', 'Secret', { data: { a: 'YQ==YQ==' } }), 'illegal base64 data at input byte 4', 'trailing garbage')
  t.equal(decodeError('', 'v1', 'Secret', { data: { a: 'YWJj\nZA==' } }), undefined, 'newlines are skipped')
  t.equal(decodeError('', 'v1', 'Secret', { data: { a: 1 } }), 'json: cannot unmarshal number into Go struct field Secret.data of type []uint8')
  t.equal(decodeError('apiextensions.k8s.io', 'v1', 'CustomResourceDefinition', { spec: { versions: [{ schema: { openAPIV3Schema: { enum: ['a', 1], default: {} } } }] } }), undefined, 'apiextensions JSON decodes itself from anything')
  const c = createCluster()
  const r = call(c, `POST ${SECRETS}`, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's', namespace: 'default' }, data: { a: 'abc' } })
  t.equal(r.status, 400)
  t.equal(r.body.message, 'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 0')
})

t.test('validation.go validateContainerPorts and ValidateService: protocol TCPX is refused 422 with the supported values', async (t) => {
  const c = createCluster()
  const d = deployment('p') as Record<string, any>
  d.spec.template.spec.containers[0].ports = [{ containerPort: 11211, protocol: 'TCPX' }]
  const r = call(c, `POST ${D}`, d)
  t.equal(r.status, 422)
  t.equal(r.body.message, 'Deployment.apps "p" is invalid: spec.template.spec.containers[0].ports[0].protocol: Unsupported value: "TCPX": supported values: "SCTP", "TCP", "UDP"')
  d.spec.template.spec.containers[0].ports = [{ containerPort: 11211, protocol: '' }]
  t.equal(call(c, `POST ${D}`, d).status, 201, 'an empty protocol is defaulted to TCP first (SetDefaults_ContainerPort)')
  const s = call(c, `POST ${SVC}`, svc({ protocol: 'TCPX' }))
  t.equal(s.status, 422)
  t.equal(s.body.message, 'Service "s" is invalid: spec.ports[0].protocol: Unsupported value: "TCPX": supported values: "SCTP", "TCP", "UDP"')
})

t.test('real kubectl: an integer in a ConfigMap\'s data is refused by server-side apply and by create, as a cluster refuses it', async (t) => {
  const sb = await startSandbox({ controllers: false })
  t.teardown(() => sb.close())
  const kubectl = async (args: string[], stdin: string) => {
    const run = promisify(execFile)(kubectlPath(), ['--kubeconfig', sb.kubeconfigPath, '--cache-dir', tempDir('mc-kubectl-cache-'), ...args], { timeout: 60_000 })
    run.child.stdin?.end(stdin)
    return (await run.then(() => undefined, (e: unknown) => e)) as { code?: number; stderr?: string } | undefined
  }
  const doc = 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: i, namespace: default}\ndata:\n  size: 3\n'
  const ssa = await kubectl(['apply', '--server-side', '--validate=false', '-f', '-'], doc)
  t.equal(ssa?.code, 1)
  t.match(ssa?.stderr, 'failed to create typed patch object (default/i; /v1, Kind=ConfigMap): .data.size: expected string, got &value.valueUnstructured{Value:3}')
  const create = await kubectl(['create', '--validate=false', '-f', '-'], doc)
  t.equal(create?.code, 1)
  t.match(create?.stderr, 'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct field ConfigMap.data of type string')
})
