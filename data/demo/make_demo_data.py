"""Write the demo dataset (cases.csv, cases.xlsx) from the hand-written cases below; output is byte-stable.

Every query here was written by hand for abbench's demo: in-car voice-assistant requests in Chinese that
a router sends either to the *fast* system (single, explicit commands it can execute at once) or to the
*slow* system (an LLM agent for reasoning, several steps, or things the fast system cannot do). The gold
labels follow the annotation guideline in README.md; a few are deliberately ambiguous or wrong, as in
any real labelled set (`note=` marks them, and README.md lists them).

Run from anywhere: ``python data/demo/make_demo_data.py``. It rewrites cases.csv and cases.xlsx next to
itself; running it twice gives identical bytes (fixed shuffle seed, fixed XLSX timestamps).
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import io
import json
import random
import re
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED = 20240917
FIXED_TIME = dt.datetime(2024, 9, 17, 10, 30, 0)

CASES: list[dict] = []


def add(domain: str, gold: str, query: str, *, history=None, state=None, note=None, rid=True) -> None:
    """One hand-written case; `note` marks a deliberately ambiguous or mislabelled gold label."""
    CASES.append(
        {
            "domain": domain,
            "gold": gold,
            "query": query,
            "history": history,
            "state": state,
            "note": note,
            "rid": rid,
        }
    )


def turns(*pairs: str) -> list[dict]:
    """History as alternating user/assistant turns, starting with the user."""
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": t} for i, t in enumerate(pairs)]


def said(*pairs: tuple[str, str]) -> list[dict]:
    """History with explicit roles (for turns the assistant starts)."""
    return [{"role": r, "content": t} for r, t in pairs]


NAV_ON = {"speed_kmh": 62, "battery_pct": 71, "nav_active": True, "gear": "D"}

# ---------------------------------------------------------------------------------------------- 地图导航
D = "地图导航"
for q in [
    "导航回家",
    "导航去公司",
    "带我去首都机场T3航站楼",
    "嗯那个，导航去一下望京SOHO T1塔楼的地下停车场",
    "附近有没有停车场",
    "附近哪有厕所啊，急",
    "导航去 Costco 浦东店",
    "退出导航",
    "取消导航吧，不去了",
    "地图放大一点",
    "地图切成2D的",
    "导行去虹桥火车站",
    "去IKEA北四环店",
    "我想去故宫，你帮我导一下航吧",
    "麻烦导航到中山公园地铁站2号口，我去接个人",
    "把家的地址改成翠湖花园5栋",
    "到浦东机场要多久",
    "从这儿到798艺术区有多远",
    "帮我找一下附近的星巴克，我想买杯咖啡",
    "导航声音大一点",
]:
    add(D, "fast", q)
for q, state in [
    ("还有多久到", {**NAV_ON, "speed_kmh": 85}),
    ("还有多远啊", NAV_ON),
    ("前面堵不堵", {**NAV_ON, "speed_kmh": 12}),
    ("换一条不堵的路线", {**NAV_ON, "speed_kmh": 8}),
    ("换成不走高速的", NAV_ON),
    ("途经一下中关村", NAV_ON),
]:
    add(D, "fast", q, state=state)
for q in [
    "帮我规划一条避开拥堵并且途经充电站的路线",
    "找一家评分高、好停车的川菜馆，人均一百左右",
    "周末带孩子去哪玩比较好，别太远",
    "去机场走高速和走辅路哪个快",
    "先去幼儿园接孩子再去公司，怎么走最顺",
    "找个能充电的商场，顺便吃个饭",
    "国庆想自驾去西藏，帮我规划一下路线",
    "导航去一个离公司近又不用排队的洗车店",
    "明天早上八点从家出发去天津，大概几点能到",
    "送完快递去最近的地铁站，然后回家",
    "哪条路线过路费最少又不绕",
    "找一个晚上十点以后还营业的药店",
    "这附近有撒好吃的推荐一下",
    "查一下附近哪个停车场便宜点",
    "开了两个多小时有点累了，附近有没有能休息的地方",
]:
    add(D, "slow", q)
add(D, "slow", "为什么导航让我绕路啊", state={**NAV_ON, "speed_kmh": 40})
add(D, "slow", "下午三点前能到苏州吗", state={"speed_kmh": 96, "battery_pct": 58, "nav_active": True})
add(D, "slow", "去杭州的路上找个服务区歇一下，最好有充电桩", state={**NAV_ON, "speed_kmh": 110})
add(D, "slow", "我要去的地方附近好停车吗", state=NAV_ON)
add(D, "slow", "刚才那个路口是不是应该右转", state={**NAV_ON, "speed_kmh": 30})
add(D, "slow", "有没有不用过收费站又不太绕的路", state=NAV_ON)
add(D, "slow", "我老婆刚发的那个位置，导航过去")
add(
    D,
    "slow",
    "上次去的那个火锅店，导过去",
    note="ambiguous: the fast system can navigate to a recent destination, but 'that hotpot place' needs a lookup",
)
add(
    D,
    "fast",
    "走第二条",
    history=turns(
        "导航去首都机场",
        "为您找到3条路线：1. 时间最短，58分钟；2. 收费少，65分钟；3. 不走高速，72分钟。请问选择哪一条？",
    ),
    rid=False,
)
add(
    D,
    "fast",
    "导航去第三个",
    history=turns(
        "附近有什么停车场",
        "为您找到5个停车场：1. 国贸商城停车场 2. 银泰中心停车场 3. 建外SOHO地下停车场 4. ...",
    ),
    rid=False,
)
add(
    D,
    "slow",
    "第一个现在还有空位吗，要排队的话就换一个",
    history=turns(
        "附近有什么停车场",
        "为您找到5个停车场：1. 国贸商城停车场 2. 银泰中心停车场 3. 建外SOHO地下停车场 4. ...",
    ),
    rid=False,
)
add(
    D,
    "slow",
    "行，就按这个走",
    history=turns(
        "帮我规划去杭州的路线，中途要充一次电",
        "建议走G60沪昆高速，在嘉兴服务区充电约30分钟，全程约3小时20分钟。要按这个方案出发吗？",
    ),
    rid=False,
)
add(
    D,
    "fast",
    "换一条不堵的",
    history=turns("导航去公司", "已开始导航，预计35分钟到达，前方2公里拥堵"),
    state={**NAV_ON, "speed_kmh": 15},
    rid=False,
)

for q in [
    "你好你好，导航去浦东国际机场2号航站楼出发层，赶飞机",
    "导航回家，走平时那条就行",
    "附近有没有那种能停大车的停车场啊，帮我找找",
]:
    add(D, "fast", q)
for q in [
    "为啥这么堵",
    "附近好玩的",
    "推荐个餐厅",
    "哪条路好走",
]:
    add(D, "slow", q, state=NAV_ON if q != "推荐个餐厅" else None)

for q in [
    "嗯……帮我导航到大兴国际机场出发层",
    "你帮我找一下附近有没有加油站啊，我朋友的车快没油了",
    "退出导航吧，我认识路了，不用导了",
]:
    add(D, "fast", q)
for q in ["订个酒店", "查个快递"]:
    add(D, "slow", q)

# ---------------------------------------------------------------------------------------------- 车控
D = "车控"
for q in [
    "打开空调",
    "哎你帮我把空调温度调到二十二度吧，谢谢啊",
    "温度再高一点",
    "把 AC 关了",
    "风量调到三档",
    "打开前挡除雾",
    "把主驾驶的座椅加热打开，开到二档就行",
    "麻烦把副驾驶那边的座椅通风给打开一下",
    "方向盘加热开一下",
    "打开座椅按摩",
    "车窗开一半",
    "把天窗打开",
    "后排窗户关上",
    "打开遮阳帘",
    "那个后备箱你帮我打开一下，我要放东西",
    "把车门锁上",
    "打开阅读灯",
    "氛围灯给我换成那种蓝色的，看着舒服点",
    "把大灯打开",
    "雨刮开到最快档",
    "后视镜折叠",
    "切换到运动模式",
    "能量回收调到最强",
    "打开香氛",
    "空掉开大点",
    "开内循环",
    "把座椅往后调一点",
    "帮我把车窗都关了",
    "打开儿童锁",
    "关闭自动启停",
    "车里有点闷",
    "前挡玻璃起雾了，看不清",
]:
    add(D, "fast", q)
add(D, "fast", "有点冷", state={"speed_kmh": 45, "outside_temp_c": 3, "cabin_temp_c": 14})
add(D, "fast", "好热啊", state={"speed_kmh": 0, "outside_temp_c": 35, "cabin_temp_c": 38, "gear": "P"})
add(
    D,
    "fast",
    "主驾调到24度，副驾26度",
    note="ambiguous: one request for two zones — single device, two settings",
)
add(D, "fast", "打开空调和座椅加热", note="mislabelled: two devices in one request is slow by the guideline")
for q in [
    "打开空调然后把座椅加热也开了",
    "如果车里超过30度就自动开空调",
    "十分钟后把座椅加热关掉",
    "设置一个午睡模式：座椅放平、关窗、放点白噪音",
    "高速上开天窗会不会很吵",
    "为什么空调吹出来的风是热的",
    "把车里弄得舒服点，我要睡会儿",
    "下雨了，把窗户都关上再开个除雾",
    "空调一直有股味道怎么办",
    "我想让副驾那边暖和点，但我这边别太热",
    "停车以后让空调再开二十分钟",
    "冬天早上出门前怎么让车提前热起来",
    "帮我把座椅调到最适合长途开车的位置",
    "除雾开了还是看不清怎么办",
]:
    add(D, "slow", q)
add(D, "fast", "再低两度", history=turns("空调开到24度", "已为您将空调调至24度"), rid=False)
add(D, "fast", "开到最高", history=turns("打开座椅加热", "主驾座椅加热已开启，当前1档"), rid=False)
add(
    D,
    "fast",
    "好的",
    history=said(("assistant", "检测到左后车窗未关，是否为您关闭？")),
    state={"speed_kmh": 0, "gear": "P", "window_rl_open": True},
    rid=False,
)
add(D, "fast", "还是冷", history=turns("有点冷", "已将温度调高2度，当前24度"), rid=False)

for q in [
    "后排左边那个窗户给我降下来一点点，透透气",
    "把后视镜加热打开，上面全是水看不清",
    "帮我把方向盘加热关掉，太烫了受不了",
    "那个雨刮开一下，调到自动档",
]:
    add(D, "fast", q)
for q in ["空调有异味", "车里好吵", "座椅怎么调最舒服"]:
    add(D, "slow", q)

for q in [
    "哎呀车里太冷了，你把空调温度给我调高两度吧",
    "麻烦帮我把主驾驶这边的车窗稍微开一点缝，谢谢",
    "那个天窗帮我关一下吧，外面好像起风了",
    "帮我打开一下座椅加热，主驾驶的，开到最高档",
    "能不能把空调风量开大一点",
    "帮我把中控屏幕的亮度调低一点，晚上太刺眼了",
    "打开一下行车记录仪，我要把刚才那段录下来",
    "把哨兵模式打开，我要去商场停一会儿",
    "打开宠物模式，我下车买个东西",
    "帮我把HUD抬头显示调亮一点",
]:
    add(D, "fast", q)
add(D, "slow", "座椅加热会不会很费电")

# ---------------------------------------------------------------------------------------------- 媒体
D = "媒体"
for q in [
    "下一首",
    "暂停一下",
    "继续播放",
    "声音大一点",
    "音量调到15",
    "我想听周杰伦的那首晴天，你帮我放一下",
    "来首陈奕迅的歌",
    "play 一下 Taylor Swift 的 Love Story",
    "放一下 Coldplay 的 Yellow",
    "打开收音机，调到FM 97.4，交通广播那个台",
    "切到蓝牙音乐",
    "打开QQ音乐放我喜欢的歌",
    "收藏这首歌",
    "单曲循环",
    "继续播放昨天没听完的那期播客，从上次停的地方开始",
    "播放郭德纲的相声",
    "放一集三体的有声书",
    "来点轻松的音乐",
    "放点嗨歌",
    "上一首",
    "换个电台",
    "这首歌叫什么名字",
    "网易云放一下每日推荐",
    "随机播放",
    "静音",
]:
    add(D, "fast", q)
add(
    D,
    "fast",
    "放首歌",
    note="ambiguous: no song named — the fast system plays something, but the choice is left open",
)
for q in [
    "来点适合开夜车又不太吵的歌",
    "这首歌是谁唱的，他还有什么好听的",
    "孩子在后面睡着了，放点什么合适",
    "帮我建个歌单，把周杰伦的快歌都放进去",
    "把刚才那首歌分享给老婆",
    "这歌词是什么意思啊",
    "推荐几部适合全家一起听的有声书",
    "找一首九十年代的老歌，副歌是啦啦啦那种",
    "放点跟现在天气搭的音乐",
    "为什么蓝牙连上了但是没声音",
    "今天那期播客帮我总结一下讲了啥",
    "放一首适合求婚的英文歌，别太俗",
    "周杰伦和林俊杰的歌轮流放",
]:
    add(D, "slow", q)
add(D, "fast", "换一首", history=turns("播放周杰伦的歌", "正在播放周杰伦《晴天》"), rid=False)
add(
    D,
    "slow",
    "这首是哪年出的，讲的什么故事",
    history=turns("播放周杰伦的歌", "正在播放周杰伦《晴天》"),
    rid=False,
)
add(D, "fast", "不好听，来点摇滚", history=turns("放点歌", "为您播放每日推荐歌单"), rid=False)

for q in [
    "把声音调小一点，后面孩子在睡觉呢",
    "放一下我收藏的那个歌单，就是叫开车必听的那个",
    "切到USB里面的歌，放第一首就行",
]:
    add(D, "fast", q)
for q in ["这谁唱的", "来点好听的", "有什么新歌"]:
    add(D, "slow", q)

for q in [
    "我想听那个五月天的倔强，就是演唱会版本的那个",
    "下一首下一首，这首不好听，换一首吧",
    "把音乐声音调到二十，后排听不清楚",
    "放首周杰伦的歌呗，随便哪首都行",
]:
    add(D, "fast", q)
for q in ["歌词啥意思", "哄娃的歌"]:
    add(D, "slow", q)

# ---------------------------------------------------------------------------------------------- 电话
D = "电话"
for q in [
    "打电话给妈妈",
    "你好，帮我给老婆打个电话，就是备注老婆的那个",
    "打给 Kevin",
    "打13912345678",
    "回拨刚才的未接来电",
    "重拨",
    "接听",
    "挂了吧",
    "把麦克风静音",
    "打开通讯录",
    "给张伟发短信说我到楼下了",
    "发微信给老王，说晚上七点老地方见",
    "帮我给妈发个消息，说今晚加班不回去吃饭了，让她别等我",
    "打给物业",
    "呼叫道路救援",
    "打王总手机",
    "切换到手机接听",
    "有哪些未接来电",
    "给刚才那个号码打回去",
]:
    add(D, "fast", q)
add(
    D,
    "slow",
    "打电话给老婆，告诉她我晚点回家",
    note="ambiguous: calling is fast; the annotator read 'tell her' as a task",
)
for q in [
    "给老板发个消息说我堵车要晚到，措辞正式一点",
    "帮我回一下老婆的微信，就说我知道了，但语气委婉点",
    "念一下刚才的微信，然后帮我回复",
    "打给昨天下午给我打了好几次的那个号码",
    "拉个三方通话，把小李和小王都叫上",
    "如果老婆打电话来就说我在开车",
    "帮我查一下刚才那个陌生号码是哪里的",
    "给所有参会的人发消息说会议推迟半小时",
    "打给离我最近的4S店",
    "我妈生日快到了，帮我编一条祝福短信发过去",
]:
    add(D, "slow", q)
add(
    D,
    "fast",
    "表哥那个",
    history=turns("打电话给张伟", "找到两个联系人：1. 张伟（同事） 2. 张伟（表哥），请问打给哪一个？"),
    rid=False,
)
add(
    D,
    "slow",
    "那就打他公司前台，号码在我上周的邮件里",
    history=turns("打电话给李经理", "通讯录中没有找到李经理"),
    rid=False,
)

for q in [
    "帮我打电话给公司前台，号码是010-85961234",
    "给我哥打个电话，用微信语音打",
]:
    add(D, "fast", q)
for q in ["回个微信", "谁找我"]:
    add(D, "slow", q)

for q in [
    "帮我打个电话给我们公司的张经理，手机号那个不是座机",
    "嗯那个打电话给我爸，备注是老爸的那个",
    "你帮我把这个电话挂掉，是个推销电话",
]:
    add(D, "fast", q)
for q in ["帮我点个外卖", "订个餐厅"]:
    add(D, "slow", q)

# ---------------------------------------------------------------------------------------------- 天气
D = "天气"
for q in [
    "今天天气怎么样",
    "帮我查一下明天北京会不会下雨，下午要出去一趟",
    "现在外面多少度",
    "成都今天天气怎么样",
    "上海这周末下不下雨",
    "今天空气质量怎么样",
    "今天紫外线强吗",
    "今天限行尾号是多少",
    "明天最高温度多少度啊，我看要不要穿外套",
    "外面风大不大",
    "天汽怎么样",
    "深圳后天天气",
    "今晚会降温吗",
    "明天 weather 怎么样",
]:
    add(D, "fast", q)
add(D, "fast", "今天要带伞吗", note="ambiguous: a rain query (fast) or advice (slow); gold says fast")
for q in [
    "比较一下明天和后天哪天适合洗车",
    "这周哪天适合去爬山",
    "明天穿什么合适",
    "为什么今天这么闷",
    "下雪天开车要注意什么",
    "明天下雨的话，帮我把早上的会改成线上",
    "这几天雾霾这么重，车里空调要开什么模式",
    "周末去崇礼滑雪，那边天气和路况怎么样",
    "今天适合开窗兜风吗",
    "帮我看看这周的天气，挑一天去洗车",
    "明天早上出门会不会结冰，要不要提前预热",
    "今年夏天怎么这么热",
]:
    add(D, "slow", q)
add(D, "slow", "我去杭州的路上会下雨吗", state={**NAV_ON, "speed_kmh": 100})
add(D, "slow", "到三亚的时候那边天气怎么样", state={**NAV_ON, "speed_kmh": 90})
add(D, "fast", "那上海呢", history=turns("北京明天天气怎么样", "北京明天晴，12到24度，北风3级"), rid=False)
add(
    D,
    "slow",
    "适合带孩子去公园吗",
    history=turns("北京明天天气怎么样", "北京明天晴，12到24度，北风3级"),
    rid=False,
)
add(D, "fast", "几点开始下", history=turns("今天天气怎么样", "今天多云转小雨，18到23度"), rid=False)

for q in ["帮我查一下杭州西湖那边明天的天气怎么样，温度多少", "看一下这周末两天的天气预报"]:
    add(D, "fast", q)
for q in ["要洗车吗", "冷不冷啊穿啥"]:
    add(D, "slow", q)

for q in ["今天外面到底有多冷啊，现在气温是多少度", "你帮我看一下今天的天气，我等会儿要去跑步"]:
    add(D, "fast", q)

# ---------------------------------------------------------------------------------------------- 闲聊
D = "闲聊"
for q in [
    "你好",
    "谢谢你",
    "你叫什么名字",
    "讲个笑话",
    "拜拜",
    "你真聪明",
    "现在几点了",
    "今天几号",
    "hello 小助手",
    "讲个故事",
    "晚安",
    "你是谁开发的",
    "你能做什么",
    "出个脑筋急转弯",
]:
    add(D, "fast", q)
add(
    D,
    "fast",
    "再讲一个",
    history=turns("讲个笑话", "为什么程序员分不清万圣节和圣诞节？因为 Oct 31 = Dec 25。"),
    rid=False,
)
for q in [
    "我今天心情不太好，陪我聊聊吧",
    "为什么天空是蓝色的",
    "给我讲讲量子计算是怎么回事",
    "特斯拉和比亚迪哪个更好",
    "帮我想一句给老婆的生日祝福",
    "讲一个关于恐龙的睡前故事，要有点教育意义",
    "编个故事哄孩子睡觉，主角是一只小兔子",
    "你觉得人工智能会取代司机吗",
    "推荐一本最近值得看的书",
    "我开车老是犯困怎么办",
    "用英文怎么说我爱你",
    "世界上最高的山是哪座",
    "说说今天有什么新闻",
    "讲个冷笑话，要关于程序员的",
]:
    add(D, "slow", q)
add(
    D,
    "slow",
    "我有点累了",
    note="ambiguous: could be the fast system's canned fatigue reminder; gold says slow",
)
add(D, "slow", "帮我算一下128乘以37", note="ambiguous: arithmetic may be in the fast system's calculator")
add(
    D,
    "slow",
    "刚才那个笑话什么意思，没听懂",
    history=turns("讲个笑话", "为什么程序员分不清万圣节和圣诞节？因为 Oct 31 = Dec 25。"),
    rid=False,
)
add(D, "fast", "你觉得我今天穿什么合适", note="mislabelled: asking for advice is slow by the guideline")

for q in ["你好呀小助手，今天过得怎么样", "好了好了不用了，谢谢你啊"]:
    add(D, "fast", q)
for q in ["写首诗", "累死了", "聊五块钱的"]:
    add(D, "slow", q)

add(D, "fast", "好的好的，谢谢你啊小助手，你真是帮了大忙了")
for q in ["陪我聊会儿", "讲讲黑洞"]:
    add(D, "slow", q)

# ---------------------------------------------------------------------------------------------- 充电
D = "充电"
EV = {"speed_kmh": 0, "battery_pct": 34, "range_km": 187, "gear": "P"}
for q in [
    "帮我看一下现在车里还剩百分之多少的电",
    "现在续航多少公里",
    "导航去最近的充电站",
    "打开充电口",
    "把充电上限设到80%",
    "预约一下今天晚上11点开始充电，谷电便宜",
    "停止充电",
    "把电量百分比显示出来",
    "附近有超充吗",
    "找一下附近的蔚来换电站",
    "开启省电模式",
]:
    add(D, "fast", q)
add(D, "fast", "还要多久充满", state={**EV, "battery_pct": 62, "charging": True})
for q in [
    "我现在的电能开到上海吗",
    "去杭州路上在哪充电最合适",
    "为什么今天掉电这么快",
    "附近哪个充电站最便宜",
    "冬天续航打了七折正常吗",
    "电量低于20%的时候提醒我找充电站",
    "充电桩显示故障码E07是什么意思",
    "家里的充电桩和超充哪个对电池好",
    "帮我算一下这个月充电花了多少钱",
    "充到80%大概要多久，来得及吃个饭吗",
    "开空调会多耗多少电",
    "明天要跑400公里，今晚需要充满吗",
    "这个充电站有空闲的桩吗，没有的话换一个",
    "怎么开最省电",
]:
    add(D, "slow", q)
add(D, "slow", "到目的地电量够不够", state={**NAV_ON, "battery_pct": 23, "range_km": 118, "speed_kmh": 88})
add(
    D,
    "slow",
    "到公司还剩多少电",
    state={"speed_kmh": 54, "battery_pct": 41, "range_km": 230, "nav_active": False},
)
add(D, "slow", "回到家还剩多少续航", state={**NAV_ON, "battery_pct": 29, "range_km": 150})
add(
    D,
    "fast",
    "导航去最近的充电站，顺便看看电够不够",
    note="mislabelled: two tasks, and 'enough?' needs reasoning",
)

for q in ["打开充电口盖，我要插枪充电了", "把充电上限调回百分之百，明天要跑长途"]:
    add(D, "fast", q)
add(D, "slow", "电够吗", state={**NAV_ON, "battery_pct": 19, "range_km": 95})
add(D, "slow", "怎么省电")

add(D, "fast", "帮我找一下附近的充电站吧，最近的那个就行，电不多了")
add(D, "slow", "电池健康吗")

# ---------------------------------------------------------------------------------------------- 车辆信息
D = "车辆信息"
for q in [
    "看下胎压",
    "总里程多少了",
    "我这车还有多少公里就要去做保养了",
    "车门都关好了吗",
    "车内温度多少度",
    "打开用户手册",
    "看一下左后轮的胎压",
    "查看一下车辆状态",
    "上次保养是什么时候",
    "这趟开了多少公里",
    "玻璃水还够吗",
    "当前软件版本是多少",
]:
    add(D, "fast", q)
for q in [
    "仪表盘上有个黄色感叹号是什么意思",
    "胎压有点低还能继续开吗",
    "刹车的时候有咯吱咯吱的声音是怎么回事",
    "这车能拖房车吗",
    "保养一次大概多少钱，去哪家便宜",
    "新版本OTA更新了哪些功能",
    "我这车百公里电耗算高吗",
    "方向盘有点跑偏，要不要去做四轮定位",
    "车机越来越卡怎么办",
    "后备箱能放下28寸的行李箱吗",
    "左前轮胎压比右前低了0.3，正常吗",
    "下次保养需要换哪些东西",
    "把最近一周的驾驶数据总结一下",
]:
    add(D, "slow", q)

add(D, "fast", "帮我看看现在四个轮胎的胎压都正常不正常")
add(D, "slow", "异响")
add(
    D,
    "slow",
    "那怎么办",
    history=turns("仪表盘上那个黄灯是什么", "这是胎压报警灯，表示有轮胎胎压偏低"),
    rid=False,
)

add(D, "slow", "胎压灯亮了")

# ---------------------------------------------------------------------------------------------- 日程
D = "日程"
for q in [
    "今天有什么安排",
    "明天早上八点提醒我一下，九点有个很重要的会要开",
    "设一个下午三点的闹钟",
    "下一个会议几点",
    "提醒我半小时后给客户回电话",
    "取消明天早上的闹钟",
    "明天下午有会吗",
    "把交房租加到待办",
    "这周五有什么安排",
    "打开日历",
    "把下午四点的会改到五点",
]:
    add(D, "fast", q)
for q in [
    "把下午的会往后挪一个小时，并通知参会的人",
    "我赶得上三点在国贸的会吗",
    "帮我安排一下这周末的行程，周六要带孩子上课",
    "下周哪天下午有空，帮我约个牙医",
    "明天的会议需要准备什么材料",
    "如果明天下雨就把跑步计划取消",
    "总结一下今天的会议安排，哪些可以推掉",
    "每个月最后一个周五提醒我交水电费，节假日提前一天",
    "老婆下周生日，提前三天提醒我买礼物，再推荐几家餐厅",
    "我下午的会和接孩子的时间冲突吗",
    "到公司以后提醒我拿快递",
]:
    add(D, "slow", q)

add(D, "fast", "帮我建一个提醒，明天下午两点去银行办事，别忘了带身份证")
add(D, "slow", "周末有空吗")

# ------------------------------------------------------------------------------------------ writing

CSV_COLUMNS = ["case_id", "query", "route", "domain", "history", "vehicle_state", "request_id"]
XLSX_COLUMNS = ["用例ID", "用户query", "人工标签", "垂域", "历史对话", "车辆状态", "请求ID"]
XLSX_TITLE = "车载助手快慢系统路由评测集（人工标注，2024-09）"
# Label spellings as they come out of real annotation sheets: a few cases carry a variant.
CSV_VARIANTS = {"fast": ["Fast ", "FAST", " fast"], "slow": ["SLOW", "Slow", "slow "]}
XLSX_VARIANTS = {"fast": ["快 "], "slow": ["慢 "]}
CSV_VARIANT_COUNT = 10
XLSX_VARIANT_COUNT = 6
ZH = {"fast": "快", "slow": "慢"}

GUIDELINE = [
    "标注说明",
    "",
    "快（fast）：单一、明确、在快系统能力清单内、一步就能执行的请求；单个数值或状态的查询；固定话术的闲聊。",
    "慢（slow）：一句话多个操作；带条件或定时；比较、推荐、规划、解释原因；需要综合多个信息源；生成或润色文字；开放式闲聊与知识问答。",
    "多轮：承接上一轮的简单选择、槽位替换、对快系统提问的确认 → 快；追问上一轮的内容、确认慢系统给出的方案 → 慢。",
    "车辆状态（JSON）：speed_kmh 车速，battery_pct 电量，range_km 续航，nav_active 是否在导航，gear 档位。",
    "请求ID为空：多轮用例由标注员根据线上日志改写，没有对应的单条请求。",
]


def _request_id(i: int, query: str) -> str:
    digest = hashlib.sha256(f"{SEED}:{i}:{query}".encode()).hexdigest()
    day = 1 + int(digest[:2], 16) % 28
    return f"2024{9 if day < 20 else 8:02d}{day:02d}-{digest[2:6]}-{digest[6:18]}"


def _ambient_state(rng: random.Random) -> dict:
    """A plausible vehicle state for cases that were logged with one (it does not decide the route)."""
    moving = rng.random() < 0.7
    state = {
        "speed_kmh": rng.choice([28, 35, 47, 56, 63, 72, 88, 104, 118]) if moving else 0,
        "battery_pct": rng.randint(18, 96),
        "nav_active": rng.random() < 0.4,
        "gear": "D" if moving else rng.choice(["P", "D"]),
    }
    if rng.random() < 0.5:
        state["outside_temp_c"] = rng.randint(-5, 36)
    return state


def build_rows() -> list[dict]:
    """The cases in their published order, with ids, request ids, states and label spellings."""
    rng = random.Random(SEED)
    order = list(range(len(CASES)))
    rng.shuffle(order)
    rows = []
    for n, i in enumerate(order, start=1):
        case = CASES[i]
        case_id = f"FS-{n:04d}"
        state = case["state"]
        if state is None and rng.random() < 0.15:
            state = _ambient_state(rng)
        gold = case["gold"]
        csv_label = gold
        xlsx_label = ZH[gold]
        rows.append(
            {
                "case_id": case_id,
                "query": case["query"],
                "gold": gold,
                "csv_label": csv_label,
                "xlsx_label": xlsx_label,
                "domain": case["domain"],
                "history": json.dumps(case["history"], ensure_ascii=False) if case["history"] else "",
                "state": json.dumps(state, ensure_ascii=False) if state else "",
                "request_id": _request_id(i, case["query"]) if case["rid"] else "",
                "note": case["note"],
            }
        )
    # a few cases carry the label spellings real annotation sheets have; which ones is fixed by a hash
    for k, r in enumerate(sorted(rows, key=lambda r: _digest("csv", r["case_id"]))[:CSV_VARIANT_COUNT]):
        r["csv_label"] = CSV_VARIANTS[r["gold"]][k % len(CSV_VARIANTS[r["gold"]])]
    for r in sorted(rows, key=lambda r: _digest("xlsx", r["case_id"]))[:XLSX_VARIANT_COUNT]:
        r["xlsx_label"] = XLSX_VARIANTS[r["gold"]][0]
    return rows


def _digest(*parts: str) -> str:
    return hashlib.sha256(":".join(parts).encode()).hexdigest()


def write_csv(rows: list[dict], path: Path) -> None:
    """UTF-8 with BOM and CRLF line ends, as spreadsheet software exports it."""
    buf = io.StringIO(newline="")
    writer = csv.writer(buf, lineterminator="\r\n")
    writer.writerow(CSV_COLUMNS)
    for r in rows:
        writer.writerow(
            [r["case_id"], r["query"], r["csv_label"], r["domain"], r["history"], r["state"], r["request_id"]]
        )
    path.write_bytes(b"\xef\xbb\xbf" + buf.getvalue().encode("utf-8"))


def write_xlsx(rows: list[dict], path: Path) -> None:
    """Sheet 评测集 with a title row above the header, and a 标注说明 sheet; fixed timestamps."""
    from openpyxl import Workbook
    from openpyxl.styles import Alignment, Font, PatternFill

    wb = Workbook()
    ws = wb.active
    ws.title = "评测集"
    ws.append([XLSX_TITLE])
    ws.merge_cells(start_row=1, start_column=1, end_row=1, end_column=len(XLSX_COLUMNS))
    ws["A1"].font = Font(bold=True, size=14)
    ws.append(XLSX_COLUMNS)
    for cell in ws[2]:
        cell.font = Font(bold=True)
        cell.fill = PatternFill("solid", fgColor="DDEBF7")
    for r in rows:
        ws.append(
            [
                r["case_id"],
                r["query"],
                r["xlsx_label"],
                r["domain"],
                r["history"] or None,
                r["state"] or None,
                r["request_id"] or None,
            ]
        )
    for col, width in zip("ABCDEFG", [10, 44, 10, 10, 60, 48, 30], strict=True):
        ws.column_dimensions[col].width = width
    for row in ws.iter_rows(min_row=3, min_col=5, max_col=6):
        for cell in row:
            cell.alignment = Alignment(wrap_text=False)
    ws.freeze_panes = "A3"
    notes = wb.create_sheet("标注说明")
    for line in GUIDELINE:
        notes.append([line])
    notes.column_dimensions["A"].width = 120
    wb.properties.creator = "abbench demo"
    wb.properties.created = FIXED_TIME
    wb.properties.modified = FIXED_TIME
    buf = io.BytesIO()
    wb.save(buf)
    path.write_bytes(_stable_zip(buf.getvalue()))


def _stable_zip(data: bytes) -> bytes:
    """The same archive with fixed entry timestamps, so identical content gives identical bytes."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for name in src.namelist():
            info = zipfile.ZipInfo(name, date_time=FIXED_TIME.timetuple()[:6])
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o600 << 16
            data = src.read(name)
            if name == "docProps/core.xml":  # openpyxl stamps the save time here, whatever we set
                stamp = FIXED_TIME.strftime("%Y-%m-%dT%H:%M:%SZ").encode()
                data = re.sub(rb"(<dcterms:modified[^>]*>)[^<]*", rb"\g<1>" + stamp, data)
            dst.writestr(info, data)
    return out.getvalue()


def main() -> None:
    """Write cases.csv and cases.xlsx and print a short summary."""
    rows = build_rows()
    ids = [r["case_id"] for r in rows]
    assert len(set(ids)) == len(ids)
    queries = [r["query"] for r in rows]
    dupes = {q for q in queries if queries.count(q) > 1}
    assert not dupes, f"duplicate queries: {dupes}"
    write_csv(rows, HERE / "cases.csv")
    write_xlsx(rows, HERE / "cases.xlsx")
    by_domain: dict[str, list[int]] = {}
    for r in rows:
        by_domain.setdefault(r["domain"], [0, 0])[r["gold"] == "slow"] += 1
    print(
        f"{len(rows)} cases; fast {sum(v[0] for v in by_domain.values())}, slow {sum(v[1] for v in by_domain.values())}"
    )
    for domain, (fast, slow) in by_domain.items():
        print(f"  {domain}: {fast + slow} ({fast} fast, {slow} slow)")
    print(
        f"  with history {sum(bool(r['history']) for r in rows)}, with vehicle state {sum(bool(r['state']) for r in rows)}"
    )
    for r in rows:
        if r["note"]:
            print(f"  {r['case_id']} [{r['gold']}] {r['query']} — {r['note']}")
    for r in rows:
        if r["csv_label"] != r["gold"] or r["xlsx_label"] != ZH[r["gold"]]:
            print(f"  variant {r['case_id']}: csv {r['csv_label']!r}, xlsx {r['xlsx_label']!r}")


if __name__ == "__main__":
    main()
