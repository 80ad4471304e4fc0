/**
 * The command line: flags people know from kubectl and helm (`-f`, `--values`, `--set`, `-o`,
 * `-n`). Each command's implementation is imported only when it runs, so `render` never loads
 * the Kubernetes client.
 */
import { Command, CommanderError, Option } from 'commander'
import { RenderError } from '../render/errors.ts'
import { InputError, packageVersion, UsageError, type CliIO } from './io.ts'

const collect = (value: string, previous: string[]): string[] => [...previous, value]

const COMMANDS = ['render', 'lint', 'crd', 'rbac', 'run', 'diff', 'plan', 'chart', 'rollout', 'sandbox']

/**
 * Commands register here; each returns its exit code. With `only`, the command being run is the
 * only one registered (building the others costs start-up time and changes nothing for it).
 */
function buildProgram(io: CliIO, setCode: (code: number) => void, only?: string): Command {
  const wanted = (name: string): boolean => only === undefined || only === name
  const program = new Command('memcached-operator')
    .description('Renders Memcached resources through a chart and keeps the cluster equal to the render')
    .version(packageVersion(), '--version')
    .exitOverride()
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr })
    .showHelpAfterError('(add --help for usage)')

  if (wanted('render')) {
    program
      .command('render')
      .description('print the manifests Memcached resources become (like helm template), ready for kubectl apply -f -')
      .option('-f, --filename <file>', 'a file or directory of Memcached resources, or - for standard input (repeatable); other objects pass through unchanged', collect, [])
      .option('-R, --recursive', 'read the directories given with -f with their subdirectories')
      .option('--chart <dir>', 'chart directory (default: the bundled charts/memcached)')
      .option('--values <file>', 'a YAML file of values over each spec (repeatable)', collect, [])
      .option('--set <key=value>', 'a value over each spec, e.g. size=5,image.tag=1.6.39 (repeatable)', collect, [])
      .option('--set-string <key=value>', 'like --set, but the value is always a string (repeatable)', collect, [])
      .option('--set-json <key=json>', 'JSON values over each spec, key=json pairs as Helm takes them, e.g. \'tolerations=[{"key":"k","operator":"Exists"}],memoryMB=128\' (repeatable)', collect, [])
      .option('--set-file <key=path>', 'a value over each spec read from a file, as a string (repeatable)', collect, [])
      .addOption(new Option('-o, --output <format>', 'output format').choices(['yaml', 'json']).default('yaml'))
      .option('-s, --show-only <template>', 'only the objects of this template, e.g. templates/deployment.ejs (repeatable)', collect, [])
      .option('--output-dir <dir>', 'write each CR\'s objects to DIR/NAMESPACE/NAME/templates/*.yaml instead of stdout')
      .option('-n, --namespace <namespace>', 'namespace for resources that do not set one')
      .option('--timeout <duration>', 'how long templates may run before render gives up (a template that loops forever)', '10s')
      .addOption(new Option('--platform <platform>', 'render as the operator does on this platform (openshift: no fixed UID/GID, see docs/install.md)').choices(['kubernetes', 'openshift']).default('kubernetes'))
      .option('--overlays <file>', 'the platform\'s overlays, as run --overlays applies them (see docs/operator.md)')
      .option('--show-overlays', 'print on stderr which overlay changed which fields of which object')
      .action(async (opts) => {
        const { runRender } = await import('./render.ts')
        setCode(await runRender(opts, io))
      })
  }

  if (wanted('lint')) {
    program
      .command('lint')
      .description('check the chart: schema, templates, and that minimal values, the chart\'s ci/*.yaml example values, --values files and -f CRs render')
      .option('--chart <dir>', 'chart directory (default: the bundled charts/memcached)')
      .option('--values <file>', 'a YAML file of values: one more instance to render, over minimal values (repeatable)', collect, [])
      .option('-f, --filename <file>', 'Memcached resources to render as well (repeatable)', collect, [])
      .action(async (opts) => {
        const { runLint } = await import('./lint.ts')
        setCode(await runLint(opts, io))
      })
  }

  if (wanted('crd')) {
    program
      .command('crd')
      .description('print the CustomResourceDefinition of memcacheds.cache.example.com (or, with --kind ChartRevision or Rollout, of chartrevisions or rollouts.cache.example.com)')
      .option('--chart <dir>', 'chart directory (default: the bundled charts/memcached)')
      .addOption(new Option('--kind <kind>', 'the CRD of which kind').choices(['Memcached', 'ChartRevision', 'Rollout']).default('Memcached'))
      .action(async (opts) => {
        const { runCrd } = await import('./crd.ts')
        setCode(runCrd(opts, io))
      })
  }

  if (wanted('rbac')) {
    program
      .command('rbac')
      .description('print the operator\'s ClusterRole: fixed rules plus the kinds the chart declares (kinds.yaml)')
      .option('--chart <dir>', 'chart directory (default: the bundled charts/memcached)')
      .action(async (opts) => {
        const { runRbac } = await import('./rbac.ts')
        setCode(runRbac(opts, io))
      })
  }

  if (wanted('run')) {
    program
      .command('run')
      .description('run the operator against a cluster (kubeconfig, KUBECONFIG, or in-cluster)')
      .option('--kubeconfig <file>', 'kubeconfig file (default: KUBECONFIG, ~/.kube/config, or the in-cluster service account)')
      .option('-n, --namespace <namespace>', 'watch only this namespace (repeatable; default: all)', collect, [])
      .option('-l, --selector <selector>', 'reconcile only the Memcacheds this label selector matches, e.g. shard=a (default: all)')
      .option('--chart <dir>', 'chart directory (default: the bundled charts/memcached)')
      .option('--default-chart-revision <name>', 'the ChartRevision that Memcacheds without spec.chartRevision run (default: the one labelled cache.example.com/default=true, else the operator\'s own chart; docs/fleet.md)')
      .option('--concurrency <n>', 'reconciles running at once', '4')
      .option('--resync-period <duration>', 'how often every Memcached is reconciled even without events', '10m')
      .option('--max-concurrent-recreations <n>', 'workloads deleted and re-created at a time across every Memcached (a field that cannot change in place); 0: no limit', '1')
      .option('--recreation-timeout <duration>', 'how long a re-creation holds its slot at most while its replacement is not ready', '10m')
      .option('--max-deletes <n>', 'objects deleted (pruned or re-created) per --budget-window across every Memcached; a change over it waits; 0: no limit', '20')
      .option('--max-restarts <n>', 'workloads whose pods restart (pod template change) per --budget-window across every Memcached; 0: no limit', '50')
      .option('--budget-window <duration>', 'the window of --max-deletes and --max-restarts', '10m')
      .option('--max-prune-fraction <f>', 'a render may prune at most this fraction of a Memcached\'s objects (more is refused unless annotated); 1: no limit', '0.5')
      .option('--platform <platform>', 'auto (discovery: openshift when the cluster serves security.openshift.io), kubernetes or openshift', 'auto')
      .option('--overlays <file>', 'the platform\'s overlays: patches applied to every Memcached they select, before its own spec.overlays (see docs/operator.md)')
      .option('--leader-elect', 'elect a leader on a coordination.k8s.io/v1 Lease; only the leader reconciles')
      .option('--leader-election-namespace <namespace>', 'namespace of the Lease (default: the pod\'s own, else default)')
      .option('--leader-election-id <name>', 'name of the Lease', 'memcached-operator-leader')
      .option('--leader-elect-lease-duration <duration>', 'how long a follower waits after the last renewal before taking the Lease', '15s')
      .option('--leader-elect-renew-deadline <duration>', 'the leader stops (and exits 1) when it could not renew for this long', '10s')
      .option('--leader-elect-retry-period <duration>', 'pause between tries to acquire or renew', '2s')
      .option('--graceful-shutdown-timeout <duration>', 'on SIGTERM, in-flight reconciles are aborted after this long, then the Lease is released', '20s')
      .option('--metrics-bind-address <addr>', 'where /metrics is served (0 disables)', ':8080')
      .option('--metrics-secure', '/metrics over HTTPS, for bearer tokens the API server authenticates (TokenReview) and authorizes for get on /metrics (SubjectAccessReview)')
      .option('--metrics-cert-dir <dir>', 'tls.crt and tls.key of the HTTPS metrics server (default: a self-signed certificate)')
      .option('--health-probe-bind-address <addr>', 'where /healthz and /readyz are served (0 disables)', ':8081')
      .option('--log-level <level>', 'trace, debug, info, warn, error (default: LOG_LEVEL or info)')
      .option('--kube-api-qps <qps>', 'requests per second to the API server, retries included (client-side rate limit; negative: none)', '-1')
      .option('--kube-api-burst <n>', 'requests that may go at once above --kube-api-qps', '30')
      .action(async (opts) => {
        const { runOperator } = await import('./run.ts')
        setCode(await runOperator(opts, io))
      })
  }

  if (wanted('diff')) {
    program
      .command('diff')
      .description('show what applying the render of Memcached resources would change in the cluster (like kubectl diff): updates, re-creations (immutable fields), prunes and ownership conflicts; exit 0 none, 1 some, 2 error')
      .option('-f, --filename <file>', 'a file of Memcached resources, or - for standard input (repeatable)', collect, [])
      .option('--all', 'every Memcached in the cluster (what a chart change would do)')
      .option('--chart <dir>', 'chart directory (default: the bundled charts/memcached)')
      .option('--kubeconfig <file>', 'kubeconfig file (default: KUBECONFIG or ~/.kube/config)')
      .option('--context <name>', 'the kubeconfig context to use (default: its current-context)')
      .option('-n, --namespace <namespace>', 'namespace of CRs that set none (default: the context\'s, else default); with --all, the only namespace compared')
      .option('-l, --selector <selector>', 'only the Memcacheds this label selector matches, e.g. tier=gold')
      .addOption(new Option('-o, --output <format>', 'diff: unified diffs; json: what would happen to each object (none, update, create, recreate, prune, conflict, omit) and whether pods restart').choices(['diff', 'json']).default('diff'))
      .option('--values <file>', 'a YAML file of values over each spec (repeatable)', collect, [])
      .option('--set <key=value>', 'a value over each spec (repeatable)', collect, [])
      .option('--set-string <key=value>', 'like --set, but the value is always a string (repeatable)', collect, [])
      .option('--set-json <key=json>', 'JSON values over each spec, key=json pairs as Helm takes them (repeatable)', collect, [])
      .option('--set-file <key=path>', 'a value over each spec read from a file, as a string (repeatable)', collect, [])
      .option('--platform <platform>', 'auto (discovery, as the operator decides), kubernetes or openshift', 'auto')
      .option('--overlays <file>', 'the platform\'s overlays, as run --overlays applies them (see docs/operator.md)')
      .option('--show-overlays', 'print on stderr which overlay changed which fields of which object (-o json always lists them)')
      .action(async (opts) => {
        const { runDiff } = await import('./diff.ts')
        setCode(await runDiff(opts, io))
      })
  }

  if (wanted('plan')) {
    program
      .command('plan')
      .description('what moving every Memcached to a chart (--chart DIR) or ChartRevision (--revision NAME) would do, CR by CR: none, update, restart, prune, recreate, conflict, invalid, with totals; against the cluster, or offline from a file; exit 0 fine, 1 a CR in a --fail-on class, 2 error')
      .option('--chart <dir>', 'the target: a chart directory')
      .option('--revision <name>', 'the target: a ChartRevision of the cluster')
      .option('--kubeconfig <file>', 'kubeconfig file (default: KUBECONFIG or ~/.kube/config)')
      .option('--context <name>', 'the kubeconfig context to use (default: its current-context)')
      .option('-n, --namespace <namespace>', 'only the Memcacheds of this namespace (default: all)')
      .option('-l, --selector <selector>', 'only the Memcacheds this label selector matches, e.g. tier=gold')
      .addOption(new Option('-o, --output <format>', 'text: a line per CR that changes, then the totals; json: every CR with its class, objects and what a rollout must still find').choices(['text', 'json']).default('text'))
      .option('--fail-on <classes>', 'the classes that make the exit code 1, comma-separated', 'invalid,conflict,recreate,prune')
      .option('--platform <platform>', 'auto (discovery, as the operator decides), kubernetes or openshift', 'auto')
      .option('--offline <file>', 'plan the Memcacheds of FILE (kubectl get mc -A -o yaml) in an in-process sandbox, converged first on --current-chart: no cluster needed')
      .option('--current-chart <dir>', 'with --offline: the chart the Memcacheds run now (default: the bundled charts/memcached)')
      .option('--timeout <duration>', 'with --offline: how long their convergence may take (default 10m)')
      .action(async (opts) => {
        const { runPlan } = await import('./plan.ts')
        setCode(await runPlan(opts, io))
      })
  }

  if (wanted('chart')) {
    const chart = program.command('chart').description('chart revisions in the cluster: push a chart directory as a ChartRevision, promote one to the default (docs/fleet.md)')
    chart
      .command('push')
      .description('create the ChartRevision of the chart in DIR (named <chart>-<digest prefix>; the same files again: unchanged)')
      .argument('<dir>', 'chart directory')
      .option('--promote', 'also make it the default revision (what Memcacheds without spec.chartRevision run)')
      .option('--kubeconfig <file>', 'kubeconfig file (default: KUBECONFIG or ~/.kube/config)')
      .option('--context <name>', 'the kubeconfig context to use (default: its current-context)')
      .action(async (dir: string, opts) => {
        const { runChartPush } = await import('./chart.ts')
        setCode(await runChartPush(dir, opts, io))
      })
    chart
      .command('promote')
      .description('make ChartRevision NAME the default: every Memcached without spec.chartRevision moves to it')
      .argument('<name>', 'the ChartRevision, e.g. memcached-3f2a9c1b0d7e')
      .option('--kubeconfig <file>', 'kubeconfig file (default: KUBECONFIG or ~/.kube/config)')
      .option('--context <name>', 'the kubeconfig context to use (default: its current-context)')
      .action(async (name: string, opts) => {
        const { runChartPromote } = await import('./chart.ts')
        setCode(await runChartPromote(name, opts, io))
      })
  }

  if (wanted('rollout')) {
    const rollout = program.command('rollout').description('control a Rollout (a staged move of the fleet to a ChartRevision, driven by the operator): pause, resume, abort, status (docs/fleet.md)')
    for (const [action, what] of [
      ['pause', 'stop moving Memcacheds (spec.paused: true); the ones in flight keep their health deadline'],
      ['resume', 'move Memcacheds again (spec.paused: false)'],
      ['abort', 'end the rollout for good (spec.abort: true): its current wave returns to its previous revisions'],
    ] as const) {
      rollout
        .command(action)
        .description(what)
        .argument('<name>', 'the Rollout')
        .option('--kubeconfig <file>', 'kubeconfig file (default: KUBECONFIG or ~/.kube/config)')
        .option('--context <name>', 'the kubeconfig context to use (default: its current-context)')
        .action(async (name: string, opts) => {
          const { runRolloutControl } = await import('./rollout.ts')
          setCode(await runRolloutControl(action, name, opts, io))
        })
    }
    rollout
      .command('status')
      .description('the phase, wave, progress, the current wave\'s Memcacheds and the held ones; exit 1 when the rollout halted, was aborted or failed')
      .argument('<name>', 'the Rollout')
      .addOption(new Option('-o, --output <format>', 'text, or json (the status as the operator wrote it)').choices(['text', 'json']).default('text'))
      .option('--kubeconfig <file>', 'kubeconfig file (default: KUBECONFIG or ~/.kube/config)')
      .option('--context <name>', 'the kubeconfig context to use (default: its current-context)')
      .action(async (name: string, opts) => {
        const { runRolloutStatus } = await import('./rollout.ts')
        setCode(await runRolloutStatus(name, opts, io))
      })
  }

  if (wanted('sandbox')) {
    program
      .command('sandbox')
      .description('run the in-process Kubernetes API server on loopback (RBAC enforced; the kubeconfig is cluster-admin) with the Memcached CRD, the operator and the sample CR, until SIGINT/SIGTERM')
      .option('--port <port>', 'TCP port on 127.0.0.1 (default: a free one)')
      .option('--kubeconfig-out <file>', 'where to write the kubeconfig (default: a temporary file)')
      .option('--faults <spec>', 'fault injection, e.g. error-rate=0.05,conflict-rate=0.02,throttle-rate=0.01,latency-ms=20,watch-drop-s=5,expire-on-resume=true')
      .option('--pod-ready-delay <ms>', 'delay before simulated pods become Ready', '1000')
      .option('--pod-failure <failure=pattern>', 'containers whose image matches the pattern fail as a kubelet reports it: ImagePull, CrashLoop or NeverReady, e.g. CrashLoop=:crash$ (repeatable)', collect, [])
      .option('--chart <dir>', 'chart of the CRD and of the operator (default: the bundled charts/memcached)')
      .option('--no-operator', 'start the cluster alone (run the operator elsewhere with --kubeconfig)')
      .option('--openshift', 'act as OpenShift where pods meet it: serve SecurityContextConstraints and admit pods as the restricted-v2 SCC does')
      .option('--no-sample', 'do not apply the sample Memcached')
      .option('--watch-chart', 're-render every Memcached when a chart file changes')
      .option('--log-level <level>', 'the operator\'s log level (default: LOG_LEVEL or info)')
      .option(
        '--kubeconfig-for <identity=file>',
        'also write a kubeconfig acting as IDENTITY: a user (jane), with groups (jane,devs,ops) or a ServiceAccount (system:serviceaccount:NS:NAME); RBAC applies to it (repeatable)',
        (v: string, prev: string[] = []) => [...prev, v],
      )
      .action(async (opts) => {
        const { runSandbox } = await import('./sandbox.ts')
        setCode(await runSandbox(opts, io))
      })
  }

  return program
}

/**
 * The command line, ready to parse one `argv` (without `node` and the script) and return its exit
 * code: 0 success, 1 invalid input (reason on stderr), 2 usage error. With `only`, just that
 * command is registered. Built ahead of time by the start-up snapshot of `render`.
 */
export function prepareCli(io: CliIO, only?: string): (argv: string[]) => Promise<number> {
  let code = 0
  const program = buildProgram(
    io,
    (c) => {
      code = c
    },
    only,
  )
  return async (argv) => {
    try {
      await program.parseAsync(argv, { from: 'user' })
      return code
    } catch (err) {
      if (err instanceof CommanderError) {
        // --help and --version exit 0; every other parse failure is a usage error.
        return err.exitCode === 0 ? 0 : 2
      }
      if (err instanceof UsageError) {
        io.stderr(`error: ${err.message}\n(add --help for usage)\n`)
        return 2
      }
      if (err instanceof RenderError || err instanceof InputError) {
        io.stderr(`error: ${err.message}\n`)
        return 1
      }
      throw err
    }
  }
}

/** Runs the CLI with `argv` (without `node` and the script); returns the exit code (see {@link prepareCli}). */
export async function runCli(argv: string[], io: CliIO): Promise<number> {
  return prepareCli(io, COMMANDS.includes(argv[0] ?? '') ? argv[0] : undefined)(argv)
}
