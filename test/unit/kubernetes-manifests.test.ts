/**
 * deploy/kubernetes validates offline against the Kubernetes OpenAPI schema (issue #16, item 4).
 *
 * The test renders the kustomize base itself (kustomization.yaml's resources, namespace and labels —
 * any other kustomize field fails the test rather than being ignored), validates every object with
 * `kubernetes-models` (JSON schemas generated from the Kubernetes OpenAPI spec, checked with Ajv, no
 * cluster), and checks that the parts agree with each other and with forkbox: the probes hit /healthz on
 * the listener's port, the token file comes from the Secret, state lives on /var/lib/forkbox.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { DaemonSet } from 'kubernetes-models/apps/v1';
import { Namespace, Secret } from 'kubernetes-models/v1';
import { parseAllDocuments } from 'yaml';
import { parseTokenFile } from '../../src/protocol/http/tokens.ts';

const BASE = join(import.meta.dirname, '..', '..', 'deploy', 'kubernetes');

type Obj = Record<string, unknown>;
interface Rendered {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [k: string]: unknown;
}

/** The kustomize fields this renderer applies; anything else would be silently dropped, so it fails. */
const KUSTOMIZE_FIELDS = new Set(['apiVersion', 'kind', 'namespace', 'labels', 'resources']);
const CLUSTER_SCOPED = new Set(['Namespace']);

function loadYaml(file: string): unknown[] {
  const docs = parseAllDocuments(readFileSync(join(BASE, file), 'utf8'));
  return docs.map((d) => {
    assert.deepEqual(d.errors, [], `${file}: YAML errors`);
    return d.toJS() as unknown;
  });
}

function render(): Rendered[] {
  const [k] = loadYaml('kustomization.yaml') as [Obj];
  assert.equal(k.apiVersion, 'kustomize.config.k8s.io/v1beta1');
  assert.equal(k.kind, 'Kustomization');
  for (const key of Object.keys(k)) assert.ok(KUSTOMIZE_FIELDS.has(key), `unrendered kustomize field ${key}`);
  const labels: Record<string, string> = {};
  for (const l of (k.labels ?? []) as Obj[]) Object.assign(labels, l.pairs as Record<string, string>);
  const resources = k.resources as string[];
  assert.ok(Array.isArray(resources) && resources.length > 0, 'resources lists the manifests');
  return resources.flatMap((file) =>
    loadYaml(file).map((doc) => {
      const o = structuredClone(doc) as Rendered;
      o.metadata.labels = { ...o.metadata.labels, ...labels };
      if (typeof k.namespace === 'string' && !CLUSTER_SCOPED.has(o.kind)) o.metadata.namespace = k.namespace;
      return o;
    }),
  );
}

/** Validate one object against its kind's schema; throws with Ajv's errors when it does not conform. */
function validate(o: Rendered): void {
  const id = `${o.apiVersion} ${o.kind}`;
  // biome-ignore lint/suspicious/noExplicitAny: a parsed manifest is checked by the schema, not the compiler
  const data = o as any;
  if (id === 'apps/v1 DaemonSet') new DaemonSet(data).validate();
  else if (id === 'v1 Namespace') new Namespace(data).validate();
  else if (id === 'v1 Secret') new Secret(data).validate();
  else assert.fail(`no schema wired for ${id}: add its kubernetes-models class here`);
}

function only(objs: Rendered[], kind: string): Rendered {
  const found = objs.filter((o) => o.kind === kind);
  assert.equal(found.length, 1, `one ${kind}`);
  return found[0] as Rendered;
}

describe('deploy/kubernetes', () => {
  const objs = render();

  it('every rendered object conforms to the Kubernetes schema', () => {
    assert.deepEqual(objs.map((o) => o.kind).sort(), ['DaemonSet', 'Namespace', 'Secret']);
    for (const o of objs) assert.doesNotThrow(() => validate(o), `${o.kind} ${o.metadata.name}`);
  });

  it('the validator refuses a malformed DaemonSet (it is really checking)', () => {
    const bad = structuredClone(only(objs, 'DaemonSet')) as Obj;
    const pod = ((bad.spec as Obj).template as Obj).spec as Obj;
    const c = (pod.containers as Obj[])[0] as Obj;
    c.ports = [{ containerPort: 'seven thousand' }];
    assert.throws(() => validate(bad as Rendered));
  });

  it('the parts agree: namespace, Secret, probes, port, state volume', () => {
    const ns = only(objs, 'Namespace');
    const secret = only(objs, 'Secret');
    const ds = only(objs, 'DaemonSet');
    for (const o of [secret, ds]) assert.equal(o.metadata.namespace, ns.metadata.name);

    const spec = ds.spec as Obj;
    const podLabels = ((spec.template as Obj).metadata as Obj).labels as Record<string, string>;
    for (const [key, v] of Object.entries((spec.selector as Obj).matchLabels as Record<string, string>)) {
      assert.equal(podLabels[key], v, `selector ${key} matches the pod template`);
    }
    const pod = (spec.template as Obj).spec as Obj;
    const [c] = pod.containers as Obj[];
    assert.ok(c);
    assert.equal((c.securityContext as Obj).privileged, true);

    const args = c.args as string[];
    assert.equal(args[0], 'serve');
    const listen = args[args.indexOf('--listen') + 1] ?? '';
    const port = Number(listen.split(':').at(-1));
    const [p] = c.ports as Obj[];
    assert.equal(p?.containerPort, port, '--listen port is the container port');
    for (const probe of ['readinessProbe', 'livenessProbe']) {
      const get = (c[probe] as Obj).httpGet as Obj;
      assert.equal(get.path, '/healthz');
      assert.ok(get.port === p?.name || get.port === port, `${probe} targets the listener`);
    }

    const volumes = new Map((pod.volumes as Obj[]).map((v) => [v.name as string, v]));
    const mounts = c.volumeMounts as Obj[];
    const mountOf = (path: string) =>
      mounts.find((m) => path.startsWith(`${m.mountPath as string}/`) || m.mountPath === path);
    const env = new Map((c.env as Obj[]).map((e) => [e.name, e.value]));
    const stateDir = env.get('FORKBOX_STATE_DIR') as string;
    assert.equal(stateDir, '/var/lib/forkbox');
    const state = volumes.get(mountOf(stateDir)?.name as string);
    assert.ok(state?.hostPath ?? state?.persistentVolumeClaim, 'state is on a hostPath or a volume');

    const tokenFile = args[args.indexOf('--token-file') + 1] ?? '';
    const tokenMount = mountOf(tokenFile);
    assert.ok(tokenMount, `a volume is mounted over ${tokenFile}`);
    const tokenVol = volumes.get(tokenMount.name as string)?.secret as Obj;
    assert.equal(tokenVol.secretName, secret.metadata.name, 'the token file comes from the Secret');
    assert.equal((tokenVol.defaultMode as number) & 0o077, 0, 'the token file is readable by its owner only');
    const key = tokenFile.slice((tokenMount.mountPath as string).length + 1);
    const text = (secret.stringData as Record<string, string>)[key];
    assert.equal(typeof text, 'string', `the Secret has the key ${key}`);
    assert.deepEqual(parseTokenFile(text as string), [], 'as shipped, the Secret holds no usable token');
  });
});
