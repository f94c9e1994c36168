// Package sim is the simulated model provider.
package sim
