import { mount } from 'svelte';
import App from './App.svelte';

const target = document.getElementById('app');
if (!target) throw new Error('renderer/index.html has no element with id "app" to mount into');

export default mount(App, { target });
