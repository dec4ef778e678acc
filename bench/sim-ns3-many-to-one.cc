// The ns-3 side of bench/sim.sh: HOSTS sources on point-to-point links of RATE into a router whose
// link to one sink (also RATE) has a drop-tail device queue of QUEUE packets. Each source sends
// UDP packets of SIZE payload bytes at LOAD x RATE (constant bit rate) for TIME seconds.
// Prints packets sent, received at the sink, lost (sent - received: drops plus at most a queue's
// worth still in flight), ns-3 events, and the CPU and wall-clock seconds of Simulator::Run.
#include <chrono>
#include <ctime>
#include <cstdio>

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

using namespace ns3;

static uint64_t g_sent = 0;
static void Sent(Ptr<const Packet>) { g_sent++; }

int main(int argc, char* argv[]) {
  uint32_t hosts = 4;
  std::string rate = "100Mbps";
  double load = 0.5;
  uint32_t size = 1472;
  uint32_t queue = 100;
  double time = 5.0;
  CommandLine cmd;
  cmd.AddValue("hosts", "sending hosts", hosts);
  cmd.AddValue("rate", "link rate", rate);
  cmd.AddValue("load", "fraction of its link each host offers", load);
  cmd.AddValue("size", "UDP payload bytes", size);
  cmd.AddValue("queue", "bottleneck queue, packets", queue);
  cmd.AddValue("time", "simulated seconds", time);
  cmd.Parse(argc, argv);

  NodeContainer senders;
  senders.Create(hosts);
  Ptr<Node> router = CreateObject<Node>();
  Ptr<Node> sink = CreateObject<Node>();
  InternetStackHelper stack;
  stack.Install(senders);
  stack.Install(router);
  stack.Install(sink);

  PointToPointHelper p2p;
  p2p.SetDeviceAttribute("DataRate", StringValue(rate));
  p2p.SetChannelAttribute("Delay", StringValue("0s"));
  p2p.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue(std::to_string(queue) + "p"));
  Ipv4AddressHelper addr;
  TrafficControlHelper tch;
  for (uint32_t i = 0; i < hosts; i++) {
    NetDeviceContainer d = p2p.Install(senders.Get(i), router);
    char net[32];
    std::snprintf(net, sizeof net, "10.%u.%u.0", 1 + i / 250, i % 250);
    addr.SetBase(net, "255.255.255.0");
    addr.Assign(d);
  }
  NetDeviceContainer bottleneck = p2p.Install(router, sink);
  addr.SetBase("10.200.0.0", "255.255.255.0");
  Ipv4InterfaceContainer sinkIf = addr.Assign(bottleneck);
  // Only the device's drop-tail queue: no queue disc in front of it (Assign installed one).
  tch.Uninstall(bottleneck.Get(0));
  Ipv4GlobalRoutingHelper::PopulateRoutingTables();
  PacketSinkHelper sinkHelper("ns3::UdpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), 9));
  ApplicationContainer sinkApp = sinkHelper.Install(sink);
  sinkApp.Start(Seconds(0));
  DataRate line(rate);
  OnOffHelper onoff("ns3::UdpSocketFactory", InetSocketAddress(sinkIf.GetAddress(1), 9));
  onoff.SetConstantRate(DataRate(uint64_t(line.GetBitRate() * load)), size);
  for (uint32_t i = 0; i < hosts; i++) {
    ApplicationContainer a = onoff.Install(senders.Get(i));
    a.Start(Seconds(0.0001 * i));
    a.Stop(Seconds(time));
  }
  Config::ConnectWithoutContext("/NodeList/*/ApplicationList/*/$ns3::OnOffApplication/Tx",
                                 MakeCallback(&Sent));
  if (getenv("WEFT_NS3_DEBUG")) {
    std::printf("root qdisc on bottleneck: %p\n",
                PeekPointer(router->GetObject<TrafficControlLayer>()->GetRootQueueDiscOnDevice(
                    bottleneck.Get(0))));
  }
  Simulator::Stop(Seconds(time));
  auto t0 = std::chrono::steady_clock::now();
  std::clock_t c0 = std::clock();
  Simulator::Run();
  double cpu = double(std::clock() - c0) / CLOCKS_PER_SEC;
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  uint64_t rx = DynamicCast<PacketSink>(sinkApp.Get(0))->GetTotalRx() / size;
  // Everything sent and not received was dropped by the full bottleneck (or is still queued).
  uint64_t dropped = g_sent - rx;
  std::printf("ns3 sent=%llu received=%llu dropped=%llu events=%llu cpu_s=%.6f wall_s=%.6f\n",
              (unsigned long long)g_sent, (unsigned long long)rx, (unsigned long long)dropped,
              (unsigned long long)Simulator::GetEventCount(), cpu, wall);
  Simulator::Destroy();
  return 0;
}
