// Writes, on stdout, a TypeScript module that holds a Grafana dashboard (a JSON file) as typed
// constants, so that the TypeScript compiler checks it against Grafana's own schema, the types of
// @grafana/schema: the dashboard against `Dashboard`, and each panel's options and field config
// against its panel type's `Options` and `FieldConfig`. Object literals get TypeScript's excess
// property check, so a misspelt or unknown field is an error as well as a wrong type or value.
//
//   node scripts/lib/dashboard-types.mjs DASHBOARD.json > dashboard.ts
//
// A panel type without a schema here is an error: every panel is checked, or the file is refused.
import { readFileSync } from "node:fs";

const file = process.argv[2];
const dashboard = JSON.parse(readFileSync(file, "utf8"));
const cfg = (name, cfgName) =>
  `@grafana/schema/dist/esm/raw/composable/${name}/panelcfg/x/${cfgName}PanelCfg_types.gen`;
// Panel type → the module of its options and field config (the field config's `custom`).
const panels = {
  timeseries: { module: cfg("timeseries", "TimeSeries"), fieldConfig: true },
  stat: { module: cfg("stat", "Stat"), fieldConfig: false },
};

const out = [
  `import type { Dashboard } from "@grafana/schema";`,
  // JSON holds an enum's value, not the enum: each enum of the schema as the union of its values.
  `type Json<T> = T extends string ? \`\${T}\` : T extends number | boolean | null | undefined ? T`,
  `  : T extends Array<infer U> ? Array<Json<U>> : T extends object ? { [K in keyof T]: Json<T[K]> } : T;`,
];
for (const [type, { module, fieldConfig }] of Object.entries(panels)) {
  const name = type[0].toUpperCase() + type.slice(1);
  const field = fieldConfig ? `, FieldConfig as ${name}FieldConfig` : "";
  out.push(`import type { Options as ${name}Options${field} } from "${module}";`);
}
out.push(`export const dashboard: Json<Dashboard> = ${JSON.stringify(dashboard, null, 2)};`);
let failed = false;
for (const panel of dashboard.panels ?? []) {
  const schema = panels[panel.type];
  if (!schema) {
    console.error(`${file}: panel ${panel.id} (${panel.title}): no schema for panel type ${panel.type}`);
    failed = true;
    continue;
  }
  const name = panel.type[0].toUpperCase() + panel.type.slice(1);
  out.push(`export const panel${panel.id}Options: Json<${name}Options> = ${JSON.stringify(panel.options ?? {})};`);
  const custom = panel.fieldConfig?.defaults?.custom;
  if (schema.fieldConfig) {
    out.push(`export const panel${panel.id}Custom: Json<${name}FieldConfig> = ${JSON.stringify(custom ?? {})};`);
  } else if (custom !== undefined) {
    console.error(`${file}: panel ${panel.id}: a ${panel.type} panel has no custom field config`);
    failed = true;
  }
}
if (failed) process.exit(1);
console.log(out.join("\n"));
