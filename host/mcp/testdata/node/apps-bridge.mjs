// The browser bundle of @modelcontextprotocol/ext-apps' host side, for apps.mjs: the Go
// test bundles this entry with rolldown (an IIFE, global ExtAppsBridge).
export { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";
